package session

import (
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// An extension writes a custom message and a custom entry after the
// prompt was created and before it was persisted: the prompt still opens
// a run of its own (it is no follow-up), and the extension's entries go
// with it.
func TestInjectedBeforeAPrompt(t *testing.T) {
	f := newFile(nil)
	f.user("first")
	f.assistant("stop", usage{10, 1})
	created := f.now.Add(5 * time.Millisecond)
	f.entry("custom_message", map[string]any{"customType": "ctx", "content": "injected", "display": true})
	f.entry("custom", map[string]any{"customType": "state", "data": map[string]any{"n": 1}})
	f.steer("second", created)
	f.assistant("stop", usage{10, 1})
	tr := traceBytes(t, f.bytes(), Config{})
	rs := runs(t, tr, 2)
	if rs[0].hasEvent("pi.custom_message") || !rs[1].hasEvent("pi.custom_message") || !rs[1].hasEvent("pi.custom") {
		t.Error("the extension's entries are not on the run of the prompt they were written for")
	}
	for _, r := range rs {
		if r.str("pi.end_reason") != "settled" || r.str("pi.turns") != "1" {
			t.Errorf("run %s: %s, %s turns", r.s.SpanContext().TraceID(), r.str("pi.end_reason"), r.str("pi.turns"))
		}
	}
}

// A header later than every entry (the file re-saved, or cloned by an
// extension with its history) bounds nothing: every run is traced, also
// when the header names a parent session; such a file is only known not
// to be a fork once it ends without an entry newer than the header.
func TestHeaderLaterThanItsEntries(t *testing.T) {
	for _, parent := range []string{"", "/x/2026-11-30T08-00-00-000Z_parent-1.jsonl"} {
		late := t0.Add(24 * time.Hour)
		hdr := map[string]any{"timestamp": iso(late)}
		if parent != "" {
			hdr["parentSession"] = parent
		}
		f := newFile(hdr)
		f.user("a")
		f.assistant("toolUse", usage{10, 1}, "bash:c1")
		f.result("c1", false)
		f.assistant("stop", usage{10, 1})
		f.user("b")
		f.assistant("stop", usage{10, 1})

		rec := tracetest.NewSpanRecorder()
		ids := spanid.NewGenerator(nil)
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(ids))
		// Since, from the entries' times, not the header's.
		tr := New(Config{TracerProvider: tp, Runs: from(0, t0.Add(-time.Minute))})
		feed(tr, f.bytes())
		if tr.Idle(late.Add(time.Hour), time.Second); len(rec.Ended()) != 0 && parent != "" {
			t.Errorf("parent %q: traced before the file told whether it is a fork", parent)
		}
		tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
		if st := tr.Stats(); st.Runs != 2 || tr.Committed() != int64(len(f.bytes())) {
			t.Errorf("parent %q: stats %+v, committed %d", parent, st, tr.Committed())
		}
		roots := forest(t, rec)
		if len(roots) != 2 || !roots[0].s.StartTime().Before(late) {
			t.Errorf("parent %q: %d roots, the first starting %v", parent, len(roots), roots[0].s.StartTime())
		}
		for _, r := range roots {
			if strings.Contains(parent, "parent-1") && r.str("pi.session.parent_id") != "parent-1" {
				t.Errorf("root %s without its parent session", r.name())
			}
			if len(r.s.Links()) != 0 {
				t.Errorf("root %s links to %v", r.name(), r.s.Links())
			}
		}
	}
}

// Fields of other types than Pi writes (as untyped extensions and other
// tools write them) are left out; the entry is kept, and the entries
// below it stay on its branch.
func TestMistypedFields(t *testing.T) {
	f := newFile(map[string]any{"version": "3"})
	f.message(map[string]any{"role": "user", "content": "go", "timestamp": iso(f.now)})
	f.entry("custom_message", map[string]any{"customType": "x", "content": "c", "display": "yes"})
	f.message(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "toolCall", "id": "c1", "name": "bash", "arguments": map[string]any{}}},
		"provider": "prov", "model": "mod", "usage": usage{10, 1}.json(), "stopReason": "toolUse", "timestamp": ms(f.now), "durationMs": "80"})
	f.message(map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "isError": "false", "timestamp": ms(f.now)})
	f.entry("custom_message", map[string]any{"customType": "x", "content": "c", "display": map[string]any{"mode": "full"}})
	f.assistant("stop", usage{10, 1})
	tr := traceBytes(t, f.bytes(), Config{})
	r := runs(t, tr, 1)[0]
	if got, want := r.shape(), "invoke_agent pi\n  pi.agent_run\n    pi.turn\n      chat mod\n      execute_tool bash\n    pi.turn\n      chat mod\n"; got != want {
		t.Errorf("shape:\n%s\nwant:\n%s", got, want)
	}
	if st := tr.tracer.Stats(); st.Damaged != 0 || st.Mistyped != 5 || st.Entries != 6 {
		t.Errorf("stats %+v, want 5 mistyped of 6 entries (all but the last), none damaged", st)
	}
	if v, _ := eventAttr(r, "pi.custom_message", "pi.custom.display"); v != "" {
		t.Errorf("display %q from a string", v)
	}
	if _, err := decodeEntry([]byte(`{"type":"custom_message","id":"a","display":"false"}`)); err != nil {
		t.Error(err)
	}
}

// A damaged line between two entries does not split the rest of the file
// off as a branch: the entry after it continues the run.
func TestDamagedLineDoesNotBranch(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	f.assistant("toolUse", usage{10, 1}, "bash:c1")
	cut := f.result("c1", false)
	f.lines[len(f.lines)-1] = f.lines[len(f.lines)-1][:40] // written half
	f.prev = cut
	f.assistant("stop", usage{10, 1})
	f.user("again")
	f.assistant("stop", usage{10, 1})
	tr := traceBytes(t, f.bytes(), Config{})
	for _, r := range runs(t, tr, 2) {
		if r.str("pi.branch") != "<none>" {
			t.Errorf("run is a branch: %s", r.shape())
		}
	}
	if st := tr.tracer.Stats(); st.Damaged != 1 {
		t.Errorf("stats %+v", st)
	}
}

// Entries written twice are one event each: the same entry id again (a
// line repeated, a run appended again), and a tool result persisted again
// under a new id. A call id a later message uses again is a new call.
func TestRepeatedEntries(t *testing.T) {
	f := newFile(nil)
	u := f.user("go")
	f.assistant("toolUse", usage{10, 1}, "bash:c1")
	f.result("c1", false)
	f.lines = append(f.lines, f.lines[len(f.lines)-1]) // the same line again
	again := f.result("c1", false)                     // the same result, another id
	f.assistant("toolUse", usage{10, 1}, "bash:c1")    // the model reuses the id
	f.result("c1", true)
	f.assistant("stop", usage{10, 1})
	start := len(f.lines)
	f.user("two")
	f.assistant("stop", usage{10, 1})
	f.lines = append(f.lines, f.lines[start:]...) // the last run appended again
	tr := traceBytes(t, f.bytes(), Config{})
	rs := runs(t, tr, 2)
	if got, want := rs[0].shape(), "invoke_agent pi\n  pi.agent_run\n    pi.turn\n      chat mod\n      execute_tool bash\n    pi.turn\n      chat mod\n      execute_tool bash !\n    pi.turn\n      chat mod\n"; got != want {
		t.Errorf("shape:\n%s\nwant:\n%s", got, want)
	}
	if st := tr.tracer.Stats(); st.Repeated != 1+1+2 {
		t.Errorf("stats %+v, want 4 repeated", st)
	}
	_, _ = u, again
}
