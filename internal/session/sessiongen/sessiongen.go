// Package sessiongen writes long synthetic Pi session files for
// benchmarks: months of history in one file, in the shape of the real
// captures in testdata/sessions (system prompt, prompts, tool calls with
// outputs of realistic sizes, failing tools, retries, compactions, setting
// changes). The output is deterministic for a seed.
package sessiongen

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Config sizes the file.
type Config struct {
	Size int64  // bytes to write, at least; the last run is completed
	Seed uint64 // for the sizes and choices
	// Subagents makes every tool call a call of the subagent extension's
	// tool, whose result carries two children's runs (details.results).
	Subagents bool
	// ID is the session id of the header; files of one history need
	// their own, since trace ids derive from it. Default: a fixed one.
	ID string
	// Start is the time of the header; entries follow it. Default: a
	// fixed day in January 2026.
	Start time.Time
}

// Stats says what was written.
type Stats struct {
	Bytes, Lines, Runs, ToolCalls, Compactions, Retries int64
}

type gen struct {
	w     *bufio.Writer
	rng   *rand.Rand
	now   time.Time
	prev  string
	n     int64
	stats Stats
	err   error
	text  string
	subs  bool
}

// Write writes one session file of about cfg.Size bytes to w.
func Write(w io.Writer, cfg Config) (Stats, error) {
	g := &gen{w: bufio.NewWriterSize(w, 1<<20), rng: rand.New(rand.NewPCG(cfg.Seed, 7)), now: cfg.Start}
	if g.now.IsZero() {
		g.now = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	}
	g.subs = cfg.Subagents
	g.text = strings.Repeat("The quick brown fox jumps over the lazy dog; pi edits the file and runs the tests. ", 8)
	id := cmp.Or(cfg.ID, "0193bench-0000-7000-8000-000000000000")
	g.line(map[string]any{"type": "session", "version": 3, "id": id, "timestamp": g.iso(), "cwd": "/home/dev/work/project"})
	g.entry("model_change", map[string]any{"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
	g.entry("thinking_level_change", map[string]any{"thinkingLevel": "medium"})
	g.message(map[string]any{"role": "system", "content": "", "sections": map[string]any{"preamble": g.pad(2400), "tools": g.pad(3000)}, "timestamp": g.ms(0)})
	for g.stats.Bytes < cfg.Size && g.err == nil {
		g.run()
	}
	if g.err == nil {
		g.err = g.w.Flush()
	}
	return g.stats, g.err
}

func (g *gen) pad(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(g.text)
	}
	return b.String()[:n]
}

func (g *gen) iso() string              { return g.now.UTC().Format("2006-01-02T15:04:05.000Z") }
func (g *gen) ms(d time.Duration) int64 { return g.now.Add(d).UnixMilli() }
func (g *gen) wait(d time.Duration)     { g.now = g.now.Add(d) }

func (g *gen) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		g.err = err
		return
	}
	g.raw(b)
}

func (g *gen) raw(b []byte) {
	b = append(b, '\n')
	if _, err := g.w.Write(b); err != nil {
		g.err = err
	}
	g.stats.Bytes += int64(len(b))
	g.stats.Lines++
}

func (g *gen) entry(typ string, fields map[string]any) string {
	g.n++
	id := fmt.Sprintf("%08x", uint32(g.n*2654435761))
	// Pi's key order: type, id, parentId, timestamp, then the rest.
	var parent any
	if g.prev != "" {
		parent = g.prev
	}
	head, _ := json.Marshal([]any{typ, id, parent, g.iso()})
	var h [4]json.RawMessage
	_ = json.Unmarshal(head, &h)
	rest, err := json.Marshal(fields)
	if err != nil {
		g.err = err
		return id
	}
	b := fmt.Appendf(nil, `{"type":%s,"id":%s,"parentId":%s,"timestamp":%s`, h[0], h[1], h[2], h[3])
	if len(rest) > 2 {
		b = append(append(b, ','), rest[1:]...)
	} else {
		b = append(b, '}')
	}
	g.raw(b)
	g.prev = id
	return id
}

func (g *gen) message(m map[string]any) string {
	return g.entry("message", map[string]any{"message": m})
}

// logSize draws a size around median, spread over orders of magnitude.
func (g *gen) logSize(median float64) int {
	return int(median * math.Exp(g.rng.NormFloat64()*1.2))
}

func (g *gen) usage(in, out int) map[string]any {
	cost := float64(in)*3e-6 + float64(out)*15e-6
	return map[string]any{"input": in, "output": out, "cacheRead": in * 3, "cacheWrite": 0, "totalTokens": in*4 + out,
		"cost": map[string]any{"input": float64(in) * 3e-6, "output": float64(out) * 15e-6, "cacheRead": float64(in) * 9e-7, "cacheWrite": 0, "total": cost}}
}

func (g *gen) assistant(stop string, text int, calls []map[string]any) {
	content := []any{map[string]any{"type": "text", "text": g.pad(text)}}
	for _, c := range calls {
		content = append(content, c)
	}
	d := time.Duration(500+g.rng.IntN(8000)) * time.Millisecond
	m := map[string]any{"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
		"usage": g.usage(2000+g.rng.IntN(30000), 50+g.rng.IntN(800)), "stopReason": stop, "timestamp": g.ms(0), "durationMs": d.Milliseconds(), "thinkingLevel": "medium"}
	if stop == "error" {
		m["errorMessage"] = `529: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
		m["usage"] = g.usage(0, 0)
	}
	g.wait(d + 5*time.Millisecond)
	g.message(m)
}

// run is one prompt: a few turns of tool calls, then an answer.
func (g *gen) run() {
	g.wait(time.Duration(30+g.rng.IntN(600)) * time.Second)
	g.message(map[string]any{"role": "user", "content": g.pad(50 + g.logSize(150)), "timestamp": g.ms(-3 * time.Millisecond)})
	g.stats.Runs++
	if g.rng.IntN(40) == 0 {
		a := g.prev
		g.assistant("error", 0, nil)
		g.entry("context_edit", map[string]any{"targetId": a, "replacement": nil})
		g.stats.Retries++
	}
	for range g.rng.IntN(6) {
		var calls []map[string]any
		for c := range 1 + g.rng.IntN(3) {
			calls = append(calls, map[string]any{"type": "toolCall", "id": fmt.Sprintf("toolu_%d_%d", g.n, c), "name": []string{"bash", "read", "edit", "write"}[g.rng.IntN(4)],
				"arguments": map[string]any{"command": g.pad(20 + g.rng.IntN(200))}})
		}
		g.assistant("toolUse", g.logSize(300), calls)
		for _, c := range calls {
			d := time.Duration(20+g.rng.IntN(3000)) * time.Millisecond
			g.wait(d)
			out := min(g.logSize(2500), 2_000_000)
			m := map[string]any{"role": "toolResult", "toolCallId": c["id"], "toolName": c["name"], "content": []any{map[string]any{"type": "text", "text": g.pad(out)}},
				"isError": g.rng.IntN(12) == 0, "durationMs": d.Milliseconds(), "timestamp": g.ms(0)}
			if g.subs {
				m["toolName"] = "subagent"
				m["content"] = []any{map[string]any{"type": "text", "text": g.pad(200)}}
				m["details"] = map[string]any{"mode": "parallel", "results": []any{g.child(d, out/2), g.child(d, out/2)}}
			}
			g.message(m)
			g.stats.ToolCalls++
		}
	}
	g.assistant("stop", g.logSize(800), nil)
	if g.stats.Runs%60 == 0 {
		g.wait(4 * time.Second)
		g.entry("compaction", map[string]any{"summary": g.pad(3000), "firstKeptEntryId": g.prev, "tokensBefore": 150000 + g.rng.IntN(40000),
			"usage": g.usage(150000, 1200), "fromHook": false})
		g.stats.Compactions++
	}
	if g.rng.IntN(30) == 0 {
		g.entry("thinking_level_change", map[string]any{"thinkingLevel": []string{"low", "medium", "high"}[g.rng.IntN(3)]})
	}
}

// child is one subagent run of the subagent extension's result, within a
// tool call of duration d that ended now: the task, a bash call with about
// out bytes of output, and the answer.
func (g *gen) child(d time.Duration, out int) map[string]any {
	start := g.now.Add(-d)
	at := func(f float64) int64 { return start.Add(time.Duration(f * float64(d))).UnixMilli() }
	u1, u2 := g.usage(1500+g.rng.IntN(5000), 40+g.rng.IntN(300)), g.usage(2000+g.rng.IntN(5000), 40+g.rng.IntN(300))
	cost := u1["cost"].(map[string]any)["total"].(float64) + u2["cost"].(map[string]any)["total"].(float64)
	call := fmt.Sprintf("toolu_child_%d_%d", g.n, g.rng.IntN(1e6))
	return map[string]any{
		"agent": "scout", "agentSource": "user", "task": g.pad(60), "status": "completed", "exitCode": 0, "stderr": "",
		"usage": map[string]any{"input": u1["input"].(int) + u2["input"].(int), "output": u1["output"].(int) + u2["output"].(int),
			"cacheRead": 0, "cacheWrite": 0, "cost": cost, "contextTokens": 0, "turns": 2},
		"model": "anthropic/claude-sonnet-4-5", "stopReason": "stop",
		"messages": []any{
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": g.pad(80)}}, "timestamp": at(0.05)},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "toolCall", "id": call, "name": "bash", "arguments": map[string]any{"command": g.pad(40)}}},
				"provider": "anthropic", "model": "claude-sonnet-4-5", "usage": u1, "stopReason": "toolUse", "timestamp": at(0.1), "durationMs": int64(float64(d.Milliseconds()) * 0.3)},
			map[string]any{"role": "toolResult", "toolCallId": call, "toolName": "bash", "content": []any{map[string]any{"type": "text", "text": g.pad(out)}},
				"isError": false, "timestamp": at(0.5), "durationMs": int64(float64(d.Milliseconds()) * 0.05)},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": g.pad(200)}},
				"provider": "anthropic", "model": "claude-sonnet-4-5", "usage": u2, "stopReason": "stop", "timestamp": at(0.55), "durationMs": int64(float64(d.Milliseconds()) * 0.4)},
		},
	}
}
