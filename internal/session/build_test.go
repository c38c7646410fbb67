package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// file builds a session file entry by entry, with times that move on as
// Pi's would: each entry is persisted 100 ms after the one before.
type file struct {
	lines []string
	now   time.Time
	prev  string
	n     int
	v1    bool // no id/parentId, as version 1 wrote
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func newFile(hdr map[string]any) *file {
	f := &file{now: t0}
	h := map[string]any{"type": "session", "version": 3, "id": "sess-1", "timestamp": iso(t0), "cwd": "/home/me/proj"}
	for k, v := range hdr {
		if v == nil {
			delete(h, k)
			continue
		}
		h[k] = v
	}
	f.v1 = h["version"] == nil
	f.raw(h)
	return f
}

func iso(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
func ms(t time.Time) int64   { return t.UnixMilli() }

func (f *file) raw(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	f.lines = append(f.lines, string(b))
}

func (f *file) tick(d time.Duration) time.Time { f.now = f.now.Add(d); return f.now }

// entry appends an entry of typ after the previous one and returns its id.
func (f *file) entry(typ string, fields map[string]any) string {
	f.n++
	id := fmt.Sprintf("e%03d", f.n)
	e := map[string]any{"type": typ, "timestamp": iso(f.tick(100 * time.Millisecond))}
	if !f.v1 {
		e["id"] = id
		if f.prev == "" {
			e["parentId"] = nil
		} else {
			e["parentId"] = f.prev
		}
	}
	for k, v := range fields {
		e[k] = v
	}
	if p, ok := fields["parentId"]; ok && !f.v1 {
		e["parentId"] = p
	}
	f.raw(e)
	f.prev = id
	return id
}

func (f *file) message(m map[string]any) string {
	return f.entry("message", map[string]any{"message": m})
}

// user is a prompt created 10 ms before it is persisted.
func (f *file) user(text string) string {
	return f.message(map[string]any{"role": "user", "content": text, "timestamp": ms(f.now.Add(90 * time.Millisecond))})
}

// steer is a message queued at created, persisted now.
func (f *file) steer(text string, created time.Time) string {
	return f.message(map[string]any{"role": "user", "content": text, "timestamp": ms(created)})
}

type usage struct{ in, out int64 }

func (u usage) json() map[string]any {
	cost := float64(u.in)*3e-6 + float64(u.out)*15e-6
	return map[string]any{"input": u.in, "output": u.out, "cacheRead": 0, "cacheWrite": 0, "totalTokens": u.in + u.out,
		"cost": map[string]any{"input": float64(u.in) * 3e-6, "output": float64(u.out) * 15e-6, "cacheRead": 0, "cacheWrite": 0, "total": cost}}
}

// assistant is an answer that took 80 ms and was persisted 10 ms later.
func (f *file) assistant(stop string, u usage, calls ...string) string {
	content := []any{map[string]any{"type": "text", "text": "answer text"}}
	for _, c := range calls {
		name, id, _ := strings.Cut(c, ":")
		content = append(content, map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": map[string]any{"command": "secret-arg"}})
	}
	m := map[string]any{"role": "assistant", "content": content, "api": "openai-completions", "provider": "prov", "model": "mod",
		"usage": u.json(), "stopReason": stop, "timestamp": ms(f.now.Add(10 * time.Millisecond)), "durationMs": 80}
	if stop == "error" {
		m["errorMessage"] = `529: {"message":"Overloaded","type":"overloaded_error"}`
	}
	return f.message(m)
}

// result is a tool result that ran 50 ms and was persisted at once.
func (f *file) result(id string, isError bool) string {
	return f.message(map[string]any{"role": "toolResult", "toolCallId": id, "toolName": "bash", "content": []any{map[string]any{"type": "text", "text": "secret-output"}},
		"isError": isError, "durationMs": 50, "timestamp": ms(f.now.Add(100 * time.Millisecond))})
}

func (f *file) bytes() []byte { return []byte(strings.Join(f.lines, "\n") + "\n") }
