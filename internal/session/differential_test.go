package session

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
)

// summary is what the stream and the session file of one run must agree on.
type summary struct {
	chats       []string // per chat span: model, finish reason, tokens, error
	tools       []string // per tool span: call id and error
	retries     []string // per retry span: attempt and outcome
	compactions []string // per compaction span: usage
	roots       []string // per root: tokens, cost, outcome
	agents      []string // per nested invoke_agent span: agent, tokens, cost, error, times
	starts      []string // per chat span: its start, which is its message's timestamp
}

func summarise(roots []*node) summary {
	var s summary
	for _, r := range roots {
		if r.name() != "invoke_agent pi" {
			continue
		}
		s.roots = append(s.roots, fmt.Sprintf("in=%s out=%s cost=%s outcome=%s tools=%s errors=%s retries=%s compactions=%s nested=%s/%s",
			r.str("gen_ai.usage.input_tokens"), r.str("gen_ai.usage.output_tokens"), cost(r), r.str("pi.outcome"),
			r.str("pi.tool_calls"), r.str("pi.tool_errors"), r.str("pi.retries"), r.str("pi.compactions"),
			r.str("pi.nested.runs"), r.str("pi.nested.failed_runs")))
		for _, a := range r.find("invoke_agent") {
			if _, nested := a.attr("pi.nested.depth"); !nested {
				continue // the root
			}
			s.agents = append(s.agents, fmt.Sprintf("%s depth=%s in=%s out=%s cost=%s err=%v type=%s start=%d end=%d",
				a.name(), a.str("pi.nested.depth"), a.str("gen_ai.usage.input_tokens"), a.str("gen_ai.usage.output_tokens"),
				cost(a), a.s.Status().Code == codes.Error, a.str("error.type"), a.s.StartTime().UnixMilli(), a.s.EndTime().UnixMilli()))
		}
		for _, c := range r.find("chat") {
			s.chats = append(s.chats, fmt.Sprintf("%s finish=%s in=%s out=%s cost=%s err=%v type=%s",
				c.name(), c.str("gen_ai.response.finish_reasons"), c.str("gen_ai.usage.input_tokens"),
				c.str("gen_ai.usage.output_tokens"), cost(c), c.s.Status().Code == codes.Error, c.str("error.type")))
			s.starts = append(s.starts, fmt.Sprintf("%s %d", c.name(), c.s.StartTime().UnixMilli()))
		}
		for _, c := range r.find("execute_tool") {
			s.tools = append(s.tools, fmt.Sprintf("%s %s err=%v", c.name(), c.str("gen_ai.tool.call.id"), c.s.Status().Code == codes.Error))
		}
		for _, c := range r.find("pi.retry") {
			s.retries = append(s.retries, fmt.Sprintf("attempt=%s outcome=%s", c.str("pi.retry.attempt"), c.str("pi.retry.outcome")))
		}
	}
	for _, r := range roots {
		for _, c := range r.find("pi.compaction") {
			s.compactions = append(s.compactions, fmt.Sprintf("in=%s out=%s cost=%s before=%s outcome=%s",
				c.str("gen_ai.usage.input_tokens"), c.str("gen_ai.usage.output_tokens"), cost(c),
				c.str("pi.compaction.tokens_before"), c.str("pi.compaction.outcome")))
		}
	}
	sort.Strings(s.tools) // parallel tools finish in any order
	return s
}

func cost(n *node) string {
	v, ok := n.attr("pi.cost.total")
	if !ok {
		return "<none>"
	}
	return fmt.Sprintf("%.9f", math.Round(v.AsFloat64()*1e9)/1e9)
}

// differences the session file may show, and why.
var known = map[string]string{
	// Pi 1.6.0 writes the aborted answer and the tool's error result when
	// SIGTERM stops it; the stream stopped before them.
	"pi-1.6.0/sigterm-mid-tool": "roots chats starts tools",
	// A manual compaction with no run open is a trace of its own in the
	// stream; the file cannot tell it from one after the run's answer, so
	// it sits in the run (same span, same usage) and counts in its totals;
	// so does its summary call, a chat of the run in the file only.
	"pi-1.6.0/rpc-compact": "roots chats starts",
}

// TestDifferential traces each captured run twice, from Pi's stdout and
// from the session file Pi wrote in the same run, and compares the traces.
func TestDifferential(t *testing.T) {
	n := 0
	for _, v := range []string{"pi-1.6.0", "pi-1.0.3", "pi-0.73.x"} {
		for _, name := range captured(t, v) {
			if _, err := os.Stat(filepath.Join(sessionsDir(v), name+".stream.jsonl")); err != nil {
				continue // the TUI writes no stream
			}
			t.Run(v+"/"+name, func(t *testing.T) {
				fileRoots := traceBytes(t, readCapture(t, v, name+".jsonl"), Config{}).roots
				streamRoots := traceStream(t, readCapture(t, v, name+".stream.jsonl"))
				if strings.HasPrefix(name, "subagent") {
					// Nested spans are timed by the child's clock: each
					// still lies within its parent, both ways in.
					within(t, "file", fileRoots)
					within(t, "stream", streamRoots)
				}
				file, stream := summarise(fileRoots), summarise(streamRoots)
				skip := known[v+"/"+name]
				check := func(what string, a, b []string) {
					if strings.Contains(skip, what) {
						return
					}
					n++
					if strings.Join(a, "\n") != strings.Join(b, "\n") {
						t.Errorf("%s differ:\nfile:\n  %s\nstream:\n  %s", what, strings.Join(a, "\n  "), strings.Join(b, "\n  "))
					}
				}
				check("roots", file.roots, stream.roots)
				check("chats", file.chats, stream.chats)
				check("tools", file.tools, stream.tools)
				check("retries", file.retries, stream.retries)
				check("compactions", file.compactions, stream.compactions)
				check("agents", file.agents, stream.agents)
				check("starts", file.starts, stream.starts)
				if len(file.chats) == 0 && !strings.Contains(skip, "chats") {
					t.Errorf("no chat spans from the file")
				}
			})
		}
	}
	if n < 50 {
		t.Errorf("only %d comparisons made", n)
	}
}

// within checks that every span lies within its parent.
func within(t *testing.T, what string, roots []*node) {
	t.Helper()
	var walk func(n *node)
	walk = func(n *node) {
		for _, c := range n.children {
			if c.s.StartTime().Before(n.s.StartTime()) || c.s.EndTime().After(n.s.EndTime()) {
				t.Errorf("%s: %s [%v, %v] outside its parent %s [%v, %v]", what, c.name(),
					c.s.StartTime().UnixMilli(), c.s.EndTime().UnixMilli(), n.name(), n.s.StartTime().UnixMilli(), n.s.EndTime().UnixMilli())
			}
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
}
