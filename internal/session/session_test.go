package session

import (
	"bytes"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

func roots(tr traced, name string) []*node {
	var out []*node
	for _, r := range tr.roots {
		if r.name() == name {
			out = append(out, r)
		}
	}
	return out
}

func runs(t *testing.T, tr traced, want int) []*node {
	t.Helper()
	rs := roots(tr, "invoke_agent pi")
	if len(rs) != want {
		var shapes []string
		for _, r := range tr.roots {
			shapes = append(shapes, r.shape())
		}
		t.Fatalf("%d runs, want %d:\n%s", len(rs), want, strings.Join(shapes, "\n"))
	}
	return rs
}

func eventAttr(n *node, event, key string) (string, bool) {
	for _, e := range n.s.Events() {
		if e.Name != event {
			continue
		}
		for _, kv := range e.Attributes {
			if string(kv.Key) == key {
				return kv.Value.String(), true
			}
		}
		return "", true
	}
	return "", false
}

func TestTwoPromptsAndAToolCall(t *testing.T) {
	f := newFile(nil)
	f.entry("model_change", map[string]any{"provider": "prov", "modelId": "mod"})
	f.entry("thinking_level_change", map[string]any{"thinkingLevel": "high"})
	f.user("first")
	f.assistant("toolUse", usage{100, 10}, "bash:c1", "bash:c2")
	f.result("c1", false)
	f.result("c2", true)
	f.assistant("stop", usage{200, 20})
	f.entry("label", map[string]any{"targetId": "e003", "label": "checkpoint"})
	f.entry("session_info", map[string]any{"name": "secret-name"})
	f.user("second")
	f.assistant("stop", usage{300, 30})
	tr := traceBytes(t, f.bytes(), Config{})
	rs := runs(t, tr, 2)
	r := rs[0]
	if got, want := r.shape(), "invoke_agent pi\n  pi.agent_run\n    pi.turn\n      chat mod\n      execute_tool bash\n      execute_tool bash !\n    pi.turn\n      chat mod\n"; got != want {
		t.Errorf("shape:\n%s\nwant:\n%s", got, want)
	}
	for k, want := range map[string]string{
		"gen_ai.conversation.id": "sess-1", "pi.outcome": "ok", "pi.end_reason": "settled",
		"gen_ai.usage.input_tokens": "300", "gen_ai.usage.output_tokens": "30", "pi.tool_calls": "2",
		"pi.tool_errors": "1", "pi.project": "proj", "gen_ai.request.model": "mod",
	} {
		if got := r.str(k); got != want {
			t.Errorf("root %s = %s, want %s", k, got, want)
		}
	}
	if _, ok := r.attr("pi.cwd"); ok {
		t.Error("the full cwd without --capture-content")
	}
	// Settings before the first prompt, label and name after its answer.
	if v, ok := eventAttr(r, "pi.model_change", "gen_ai.request.model"); !ok || v != "mod" {
		t.Errorf("model change event: %q %v", v, ok)
	}
	if v, _ := eventAttr(r, "pi.thinking_level_changed", "pi.thinking_level"); v != "high" {
		t.Errorf("thinking level event: %q", v)
	}
	r2 := rs[1]
	if _, ok := eventAttr(r2, "pi.label", "pi.label.target_id"); !ok {
		t.Error("no pi.label event on the second run")
	}
	if v, _ := eventAttr(r2, "pi.session_info_changed", "pi.session.named"); v != "true" {
		t.Errorf("session info event: %q", v)
	}
	chat := r.find("chat")[0]
	if chat.str("pi.project") != "proj" || r.find("execute_tool")[0].str("pi.project") != "proj" {
		t.Error("pi.project is not on every span")
	}
	if got := chat.s.EndTime().Sub(chat.s.StartTime()); got != 80*time.Millisecond {
		t.Errorf("chat lasted %v, want durationMs 80ms", got)
	}
	tool := r.find("execute_tool")[0]
	if got := tool.s.EndTime().Sub(tool.s.StartTime()); got != 50*time.Millisecond {
		t.Errorf("tool lasted %v, want durationMs 50ms", got)
	}
	st := tr.tracer.Stats()
	if st.Runs != 2 || st.Entries != 11 || st.Damaged != 0 {
		t.Errorf("stats %+v", st)
	}
}

// Steering and follow-up messages, created while the run was busy, join it.
func TestSteeringJoinsTheRun(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	f.assistant("toolUse", usage{10, 1}, "bash:c1")
	queued := f.now.Add(20 * time.Millisecond)
	f.tick(time.Second)
	f.result("c1", false)
	f.steer("also this", queued)
	f.assistant("stop", usage{10, 1})
	f.steer("and then", queued.Add(time.Millisecond))
	f.assistant("stop", usage{10, 1})
	tr := traceBytes(t, f.bytes(), Config{})
	r := runs(t, tr, 1)[0]
	if got := r.str("pi.turns"); got != "3" {
		t.Errorf("pi.turns %s, want 3", got)
	}
}

// A run cut short (no result for a tool call) still shows the call, closed
// in error with the reason.
func TestToolCallWithoutResult(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	f.assistant("toolUse", usage{10, 1}, "bash:c1")
	tr := traceBytes(t, f.bytes(), Config{})
	r := runs(t, tr, 1)[0]
	tools := r.find("execute_tool")
	if len(tools) != 1 {
		t.Fatalf("%d tool spans:\n%s", len(tools), r.shape())
	}
	if s := tools[0].s.Status(); s.Code != codes.Error || s.Description != missingResult {
		t.Errorf("status %v %q", s.Code, s.Description)
	}
	if got := tools[0].str("gen_ai.tool.call.id"); got != "c1" {
		t.Errorf("call id %s", got)
	}
	if r.str("pi.outcome") != "unsettled" || r.str("pi.end_reason") != "eof" {
		t.Errorf("root outcome %s, end %s", r.str("pi.outcome"), r.str("pi.end_reason"))
	}
	// Resumed later: the next prompt closes the cut run unsettled too.
	f.user("again")
	f.assistant("stop", usage{10, 1})
	tr = traceBytes(t, f.bytes(), Config{})
	rs := runs(t, tr, 2)
	if rs[0].str("pi.outcome") != "unsettled" || rs[1].str("pi.outcome") != "ok" {
		t.Errorf("outcomes %s, %s", rs[0].str("pi.outcome"), rs[1].str("pi.outcome"))
	}
}

func TestStopReasons(t *testing.T) {
	for stop, outcome := range map[string]string{"aborted": "aborted", "length": "ok", "error": "error", "stop": "ok"} {
		f := newFile(nil)
		f.user("go")
		f.assistant(stop, usage{10, 1})
		r := runs(t, traceBytes(t, f.bytes(), Config{}), 1)[0]
		if got := r.str("pi.outcome"); got != outcome {
			t.Errorf("%s: outcome %s, want %s", stop, got, outcome)
		}
		chat := r.find("chat")[0]
		if got := chat.str("pi.stop_reason"); got != stop {
			t.Errorf("%s: stop reason %s", stop, got)
		}
	}
}

// An errored attempt, a context_edit and another attempt: a pi.retry.
func TestRetryFromTheFile(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	a := f.assistant("error", usage{0, 0})
	f.entry("context_edit", map[string]any{"targetId": a, "replacement": nil})
	f.assistant("error", usage{0, 0})
	f.entry("context_edit", map[string]any{"targetId": "x", "replacement": nil})
	f.assistant("stop", usage{10, 1})
	r := runs(t, traceBytes(t, f.bytes(), Config{}), 1)[0]
	retries := r.find("pi.retry")
	if len(retries) != 2 || retries[1].str("pi.retry.outcome") != "success" || retries[0].str("pi.retry.outcome") != "failed" {
		t.Fatalf("retries:\n%s", r.shape())
	}
	if r.str("pi.outcome") != "ok" || r.str("pi.retries") != "2" {
		t.Errorf("root %s retries %s", r.str("pi.outcome"), r.str("pi.retries"))
	}
	if got := retries[0].str("pi.retry.error"); got != "529 overloaded_error" {
		t.Errorf("retry error %q (the safe summary)", got)
	}
}

// A compaction's summary call carries its usage; usage and branch_summary
// entries count into the root's totals.
func TestUsageEntriesCountIntoTheRoot(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	f.assistant("toolUse", usage{100, 10}, "bash:c1")
	f.result("c1", false)
	f.entry("compaction", map[string]any{"summary": "secret-summary", "firstKeptEntryId": "e002", "tokensBefore": 5000, "usage": usage{50, 5}.json()})
	f.assistant("stop", usage{100, 10})
	f.entry("usage", map[string]any{"kind": "cache_warm", "provider": "prov", "model": "mod", "usage": usage{1000, 0}.json()})
	r := runs(t, traceBytes(t, f.bytes(), Config{}), 1)[0]
	c := r.find("pi.compaction")
	if len(c) != 1 || c[0].str("pi.compaction.tokens_before") != "5000" {
		t.Fatalf("compaction:\n%s", r.shape())
	}
	// The summary call is a chat below it, with the call's usage.
	if s := c[0].find("chat mod"); len(s) != 1 || s[0].str("gen_ai.usage.input_tokens") != "50" {
		t.Fatalf("summary call:\n%s", r.shape())
	}
	if got := r.str("gen_ai.usage.input_tokens"); got != "1250" {
		t.Errorf("root input tokens %s, want 100+50+100+1000", got)
	}
	if got := r.str("gen_ai.usage.output_tokens"); got != "25" {
		t.Errorf("root output tokens %s", got)
	}
	if _, ok := eventAttr(r, "pi.usage", "pi.usage.kind"); !ok {
		t.Error("no pi.usage event")
	}
}

// A run on a new branch is its own trace, says where it branched and links
// to the run it branched from.
func TestBranch(t *testing.T) {
	f := newFile(nil)
	f.user("a")
	a1 := f.assistant("stop", usage{10, 1})
	f.user("b")
	f.assistant("stop", usage{10, 1})
	f.entry("branch_summary", map[string]any{"parentId": a1, "fromId": "e004", "summary": "secret", "usage": usage{7, 3}.json()})
	f.user("c")
	f.assistant("stop", usage{10, 1})
	tr := traceBytes(t, f.bytes(), Config{})
	rs := runs(t, tr, 3)
	c := rs[2]
	if c.str("pi.branch") != "true" || c.str("pi.branch.parent_entry_id") != a1 {
		t.Fatalf("branch attributes: %v", c.s.Attributes())
	}
	links := c.s.Links()
	if len(links) != 1 || links[0].SpanContext.TraceID() != rs[0].s.SpanContext().TraceID() ||
		links[0].SpanContext.SpanID() != rs[0].s.SpanContext().SpanID() {
		t.Fatalf("links %v, want the first run's root %v", links, rs[0].s.SpanContext())
	}
	if got := c.str("gen_ai.usage.input_tokens"); got != "17" {
		t.Errorf("branch summary usage not in the new branch's run: %s", got)
	}
	if _, ok := rs[1].attr("pi.branch"); ok {
		t.Error("the run before the branch says it branched")
	}
}

// A fork copies its origin's history: not traced again; the first new run
// links to the origin run it was cut from.
func TestFork(t *testing.T) {
	origin := newFile(map[string]any{"id": "origin-1"})
	origin.user("a")
	origin.assistant("stop", usage{10, 1})
	u2 := origin.user("b")
	origin.assistant("stop", usage{10, 1})
	forkAt := origin.tick(time.Hour)
	fork := &file{now: forkAt}
	fork.raw(map[string]any{"type": "session", "version": 3, "id": "fork-1", "timestamp": iso(forkAt), "cwd": "/home/me/proj",
		"parentSession": "/home/me/.pi/agent/sessions/--home-me-proj--/2026-11-30T09-00-00-000Z_origin-1.jsonl"})
	fork.lines = append(fork.lines, origin.lines[1:]...)
	fork.prev, fork.n = origin.prev, origin.n
	fork.user("c")
	fork.assistant("stop", usage{10, 1})
	tr := traceBytes(t, fork.bytes(), Config{})
	r := runs(t, tr, 1)[0]
	if r.str("pi.session.parent_id") != "origin-1" || r.str("gen_ai.conversation.id") != "fork-1" {
		t.Errorf("attributes %v", r.s.Attributes())
	}
	want := spanid.TraceID("origin-1/" + u2)
	if l := r.s.Links(); len(l) != 1 || l[0].SpanContext.TraceID() != want {
		t.Fatalf("links %v, want trace %s", l, want)
	}
	// And the origin traced on its own gives that very trace.
	o := runs(t, traceBytes(t, origin.bytes(), Config{}), 2)
	if o[1].s.SpanContext().TraceID() != want || o[1].s.SpanContext().SpanID() != spanid.SpanID("origin-1/"+u2, spanid.Path{}) {
		t.Errorf("origin's second run is %v, the fork links to %s", o[1].s.SpanContext(), want)
	}
}

// Sessions a subagent extension writes name their parent session but copy
// nothing: every run is traced, with the parent's id.
func TestSubagentSession(t *testing.T) {
	f := newFile(map[string]any{"id": "sub-1", "parentSession": "/x/2026-11-30T09-00-00-000Z_main-1.jsonl", "cwd": "/home/me/proj/sub"})
	f.user("task")
	f.assistant("stop", usage{10, 1})
	r := runs(t, traceBytes(t, f.bytes(), Config{}), 1)[0]
	if r.str("pi.session.parent_id") != "main-1" || r.str("pi.project") != "sub" {
		t.Errorf("attributes %v", r.s.Attributes())
	}
}

func TestWindowsCwd(t *testing.T) {
	for cwd, want := range map[string]string{`C:\Users\me\proj`: "proj", `C:\Users\me\proj\`: "proj", `/home/me/proj`: "proj", `D:\`: "D:", `\\server\share\repo`: "repo"} {
		if got := agentmap.Project(cwd); got != want {
			t.Errorf("agentmap.Project(%q) = %q, want %q", cwd, got, want)
		}
	}
	f := newFile(map[string]any{"cwd": `C:\Users\me\proj`})
	f.user("go")
	f.assistant("stop", usage{10, 1})
	r := runs(t, traceBytes(t, f.bytes(), Config{}), 1)[0]
	if got := r.str("pi.project"); got != "proj" {
		t.Errorf("pi.project %q", got)
	}
}

// Version 1: a linear list without ids, the model in the header.
func TestVersion1(t *testing.T) {
	f := newFile(map[string]any{"version": nil, "provider": "oldprov", "modelId": "oldmod", "thinkingLevel": "off"})
	f.user("go")
	f.message(map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "toolCall", "id": "c1", "name": "bash", "arguments": map[string]any{}}},
		"stopReason": "toolUse", "timestamp": ms(f.now), "usage": usage{10, 1}.json()})
	f.result("c1", false)
	f.message(map[string]any{"role": "assistant", "content": []any{}, "stopReason": "stop", "timestamp": ms(f.now), "usage": usage{10, 1}.json()})
	f.entry("compaction", map[string]any{"summary": "s", "firstKeptEntryIndex": 1, "tokensBefore": 100})
	f.user("again")
	f.message(map[string]any{"role": "hookMessage", "customType": "ext", "content": "secret-hook", "display": true, "timestamp": ms(f.now)})
	f.message(map[string]any{"role": "assistant", "content": []any{}, "stopReason": "stop", "timestamp": ms(f.now), "usage": usage{10, 1}.json()})
	if strings.Contains(string(f.bytes()), `"parentId"`) {
		t.Fatal("the builder wrote ids into a version 1 file")
	}
	tr := traceBytes(t, f.bytes(), Config{})
	rs := runs(t, tr, 2)
	if got := rs[0].find("chat")[0].name(); got != "chat oldmod" {
		t.Errorf("chat span %q, want the header's model", got)
	}
	if rs[0].str("gen_ai.provider.name") != "oldprov" || len(rs[0].find("pi.compaction")) != 1 {
		t.Errorf("first run:\n%s%v", rs[0].shape(), rs[0].s.Attributes())
	}
	if v, ok := eventAttr(rs[1], "pi.custom_message", "pi.custom.type"); !ok || v != "ext" {
		t.Errorf("hookMessage (version 2's custom role) event: %q %v", v, ok)
	}
	// Ids are stable: the file traced again gives the same trace ids.
	again := runs(t, traceBytes(t, f.bytes(), Config{}), 2)
	for i := range rs {
		if !rs[i].s.SpanContext().Equal(again[i].s.SpanContext()) {
			t.Errorf("run %d: %v then %v", i, rs[i].s.SpanContext(), again[i].s.SpanContext())
		}
	}
}

// Damaged lines are counted and skipped; the rest is traced.
func TestDamagedLines(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	good := f.lines[len(f.lines)-1]
	f.lines = append(f.lines,
		good+good, // two objects on one line: the same entry twice, once
		`{"type":"message","id":"x1","parentId":"e001","message":{"role":"user","content":"bad \u12 escape"}}`,
		`{"type":"message","id":"x2","parentId":"e001","message":{"role":"assist`, // cut off
		`[1,2,3]`,
		`{"type":"message","id":"x3","parentId":"e001","message":"not an object"}`,
		`{"type":"session","version":3,"id":"again"}`, // a second header
		"\x00\x01garbage",
	)
	f.assistant("stop", usage{10, 1})
	f.entry("future_entry_type", map[string]any{"x": 1})
	tr := traceBytes(t, f.bytes(), Config{})
	runs(t, tr, 1)
	st := tr.tracer.Stats()
	if st.Damaged != 6 || st.Unknown != 1 || st.Entries != 5 || st.Repaired != 1 || st.Repeated != 2 {
		t.Errorf("stats %+v, want 6 damaged, 1 unknown, 5 entries (2 repeated), 1 repaired", st)
	}
}

// FileMappers that share Counts add their lines to it as they read them,
// both through Line and through Predecode: the totals are their Stats'.
func TestCountsAddUp(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	good := f.lines[len(f.lines)-1]
	f.lines = append(f.lines, good+good, `[1,2,3]`, "\x00garbage")
	f.assistant("stop", usage{10, 1})
	var counts Counts
	a := traceBytes(t, f.bytes(), Config{Counts: &counts})
	rec, b := record(f.bytes(), Config{Counts: &counts}, func(tr *FileMapper, b []byte) {
		decode, off := tr.Predecode(), int64(0)
		for line := range bytes.Lines(b) {
			decode(off, bytes.TrimSuffix(line, []byte("\n")))()
			off += int64(len(line))
		}
	})
	if len(rec.Ended()) == 0 {
		t.Fatal("the predecoded file traced nothing")
	}
	sa, sb := a.tracer.Stats(), b.Stats()
	if got, want := counts.Lines.Load(), sa.Lines+sb.Lines; got != want || sa.Lines == 0 {
		t.Errorf("%d lines counted, want %d (%d in one file)", got, want, sa.Lines)
	}
	if got, want := counts.Damaged.Load(), sa.Damaged+sb.Damaged; got != want || sa.Damaged != 2 {
		t.Errorf("%d damaged counted, want %d (%d in one file, want 2)", got, want, sa.Damaged)
	}
	if got, want := counts.Repaired.Load(), sa.Repaired+sb.Repaired; got != want || sa.Repaired != 1 {
		t.Errorf("%d repaired counted, want %d (%d in one file, want 1)", got, want, sa.Repaired)
	}
}

func TestHeaderOnly(t *testing.T) {
	for _, b := range []string{
		`{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T09:00:00.000Z","cwd":"/p"}` + "\n",
		"",
		"\n\n",
	} {
		tr := traceBytes(t, []byte(b), Config{})
		if len(tr.roots) != 0 || tr.tracer.Stats().Runs != 0 {
			t.Errorf("%q: %d spans", b, len(tr.roots))
		}
	}
}

// A ! command is user activity: a pi.bash span with its exit code, never
// the command without capture.
func TestBashExecution(t *testing.T) {
	f := newFile(nil)
	f.message(map[string]any{"role": "bashExecution", "command": "secret-command", "output": "secret-output", "exitCode": 2, "cancelled": false, "truncated": false, "timestamp": ms(f.now)})
	f.message(map[string]any{"role": "bashExecution", "command": "sleep 9", "output": "", "cancelled": true, "truncated": false, "timestamp": ms(f.now)})
	f.user("what did it print?")
	f.assistant("stop", usage{10, 1})
	tr := traceBytes(t, f.bytes(), Config{})
	runs(t, tr, 1)
	bash := roots(tr, "pi.bash")
	if len(bash) != 2 {
		t.Fatalf("%d pi.bash traces, want 2", len(bash))
	}
	if bash[0].str("pi.bash.exit_code") != "2" || bash[0].str("pi.bash.cancelled") != "false" || bash[1].str("pi.bash.cancelled") != "true" {
		t.Errorf("bash attributes %v / %v", bash[0].s.Attributes(), bash[1].s.Attributes())
	}
	if bash[0].str("gen_ai.conversation.id") != "sess-1" || bash[0].s.SpanContext().TraceID() == bash[1].s.SpanContext().TraceID() {
		t.Errorf("bash traces: %v %v", bash[0].s.SpanContext(), bash[1].s.SpanContext())
	}
	if bash[0].str("pi.project") != "proj" {
		t.Error("no pi.project on pi.bash")
	}
	if _, ok := bash[0].attr("pi.bash.command"); ok {
		t.Error("the command without --capture-content")
	}
}

func TestImagesAndCustomMessages(t *testing.T) {
	f := newFile(nil)
	f.message(map[string]any{"role": "user", "timestamp": ms(f.now.Add(90 * time.Millisecond)), "content": []any{
		map[string]any{"type": "text", "text": "look"},
		map[string]any{"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
	}})
	f.entry("custom_message", map[string]any{"customType": "my-ext", "content": "secret-injected", "display": false})
	f.entry("custom", map[string]any{"customType": "my-ext", "data": map[string]any{"n": 1}})
	f.assistant("stop", usage{10, 1})
	r := runs(t, traceBytes(t, f.bytes(), Config{}), 1)[0]
	if v, _ := eventAttr(r, "pi.user_images", "pi.message.images"); v != "1" {
		t.Errorf("images %q", v)
	}
	if v, _ := eventAttr(r, "pi.custom_message", "pi.custom.display"); v != "false" {
		t.Errorf("custom message display %q", v)
	}
	if _, ok := eventAttr(r, "pi.custom", "pi.custom.type"); !ok {
		t.Error("no pi.custom event")
	}
}

// Nothing a user wrote, nor any tool or command output, reaches a span
// without content capture.
func TestNoContentWithoutCapture(t *testing.T) {
	f := newFile(map[string]any{"cwd": "/home/secret-dir/proj"})
	f.message(map[string]any{"role": "bashExecution", "command": "secret-command", "output": "secret-output", "exitCode": 0, "timestamp": ms(f.now)})
	f.user("secret-prompt")
	f.assistant("toolUse", usage{10, 1}, "bash:c1")
	f.result("c1", false)
	f.entry("custom_message", map[string]any{"customType": "ext", "content": "secret-injected"})
	f.entry("label", map[string]any{"targetId": "e002", "label": "secret-label"})
	f.entry("session_info", map[string]any{"name": "secret-name"})
	f.assistant("stop", usage{10, 1})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := New(Config{TracerProvider: tp})
	feed(tr, f.bytes())
	tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
	var all bytes.Buffer
	for _, s := range rec.Ended() {
		all.WriteString(s.Name())
		for _, a := range s.Attributes() {
			all.WriteString(" " + string(a.Key) + "=" + a.Value.String())
		}
		for _, e := range s.Events() {
			for _, a := range e.Attributes {
				all.WriteString(" " + string(a.Key) + "=" + a.Value.String())
			}
		}
		all.WriteString(" " + s.Status().Description + "\n")
	}
	if len(rec.Ended()) < 5 {
		t.Fatalf("only %d spans: the test would prove nothing", len(rec.Ended()))
	}
	if strings.Contains(all.String(), "secret") {
		t.Errorf("content leaked:\n%s", all.String())
	}
}

// Committed lets a restarted follower skip what it traced; ids do not
// depend on where it started.
func TestCommittedAndSkipThrough(t *testing.T) {
	b := readCapture(t, "pi-1.6.0", "two-prompts.jsonl")
	full := traceBytes(t, b, Config{})
	rs := runs(t, full, 2)
	if got := full.tracer.Committed(); got != int64(len(b)) {
		t.Errorf("committed %d after the whole file, want %d", got, len(b))
	}
	// A follower that stopped after the first run: it read up to the
	// second prompt, which completed the first run.
	cut := bytes.Index(b, []byte(`"content":[{"type":"text","text":"Second prompt"}]`))
	cut = bytes.LastIndexByte(b[:cut], '\n') + 1
	end := bytes.IndexByte(b[cut:], '\n') + cut + 1
	part := New(Config{TracerProvider: sdktrace.NewTracerProvider()})
	feed(part, b[:end])
	first := part.Committed()
	if first != int64(cut) {
		t.Fatalf("committed %d, want %d: just past the first run's answer", first, cut)
	}
	restarted := traceBytes(t, b, Config{Runs: from(first, time.Time{})})
	again := runs(t, restarted, 1)[0]
	if !again.s.SpanContext().Equal(rs[1].s.SpanContext()) {
		t.Errorf("restart traced %v, want the second run %v", again.s.SpanContext(), rs[1].s.SpanContext())
	}
	if st := restarted.tracer.Stats(); st.Skipped != 1 || st.Runs != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestIdleAndSince(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	f.assistant("toolUse", usage{10, 1}, "bash:c1")
	mid := f.now
	f.result("c1", false)
	f.assistant("stop", usage{10, 1})
	last := f.now
	rec := tracetest.NewSpanRecorder()
	tr := New(Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	feed(tr, f.bytes()[:bytes.Index(f.bytes(), []byte(`"toolResult"`))])
	if tr.Idle(mid.Add(time.Hour), time.Minute) {
		t.Error("Idle traced a run waiting for a tool")
	}
	tr = New(Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	feed(tr, f.bytes())
	if tr.Idle(last.Add(30*time.Second), time.Minute) {
		t.Error("Idle traced before settle")
	}
	if !tr.Idle(last.Add(time.Minute), time.Minute) {
		t.Fatal("Idle did not trace a quiet final answer")
	}
	if tr.Committed() != int64(len(f.bytes())) || len(rec.Ended()) == 0 {
		t.Errorf("committed %d of %d, %d spans", tr.Committed(), len(f.bytes()), len(rec.Ended()))
	}
	tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
	if tr.Stats().Runs != 1 {
		t.Errorf("runs %d after Close", tr.Stats().Runs)
	}
	since := traceBytes(t, f.bytes(), Config{Runs: from(0, last)})
	if len(since.roots) != 0 || since.tracer.Stats().Skipped != 1 {
		t.Errorf("Since: %d roots, %+v", len(since.roots), since.tracer.Stats())
	}
}

func TestDeterministicIDs(t *testing.T) {
	b := readCapture(t, "pi-1.6.0", "threshold-compaction.jsonl")
	ids := func() []string {
		var out []string
		var walk func(*node)
		walk = func(n *node) {
			out = append(out, n.name()+" "+n.s.SpanContext().TraceID().String()+" "+n.s.SpanContext().SpanID().String())
			for _, c := range n.children {
				walk(c)
			}
		}
		for _, r := range traceBytes(t, b, Config{}).roots {
			walk(r)
		}
		return out
	}
	a, c := ids(), ids()
	if strings.Join(a, "\n") != strings.Join(c, "\n") || len(a) < 10 {
		t.Errorf("ids differ between two traces of one file:\n%s\n--\n%s", strings.Join(a, "\n"), strings.Join(c, "\n"))
	}
	seen := map[string]bool{}
	for _, s := range a {
		id := s[strings.LastIndexByte(s, ' ')+1:]
		if seen[id] {
			t.Errorf("span id %s used twice", id)
		}
		seen[id] = true
	}
}

func TestClassify(t *testing.T) {
	hdr := `{"type":"session","version":3,"id":"s","timestamp":"2026-11-30T09:00:00.000Z","cwd":"/p"}`
	for _, c := range []struct {
		head string
		want Kind
	}{
		{hdr + "\n" + `{"type":"model_change","id":"a","parentId":null}` + "\n", KindSession},
		{hdr + "\n" + `{"type":"agent_start"}` + "\n", KindStream},
		{hdr + "\n", KindSession},
		{`{"type":"session","id":"s","timestamp":"t","cwd":"/p"}` + "\n" + `{"type":"message","timestamp":"t","message":{}}` + "\n", KindSession},
		{`{"type":"response","command":"prompt"}` + "\n", KindStream},
		{"garbage\n" + `{"type":"agent_start"}` + "\n", KindStream},
		{"root:x:0:0:root:/root:/bin/bash\n", KindUnknown},
		{`{"a":1}` + "\n", KindUnknown},
		{"", KindUnknown},
		{hdr, KindUnknown}, // no LF: the line may be cut off
	} {
		if got := Classify([]byte(c.head)); got != c.want {
			t.Errorf("Classify(%.60q) = %v, want %v", c.head, got, c.want)
		}
	}
	if !Sniff([]byte(hdr)) || Sniff([]byte(`{"type":"agent_start"}`)) || Sniff([]byte("nope")) {
		t.Error("Sniff")
	}
}

// More than a thousand entries and several compactions.
func TestLongSession(t *testing.T) {
	f := newFile(nil)
	for i := 0; i < 300; i++ {
		f.user("go")
		f.assistant("toolUse", usage{10, 1}, "bash:c"+string(rune('a'+i%26)))
		f.result("c"+string(rune('a'+i%26)), i%7 == 0)
		f.assistant("stop", usage{10, 1})
		if i%100 == 99 {
			f.entry("compaction", map[string]any{"summary": "s", "firstKeptEntryId": f.prev, "tokensBefore": 9000, "usage": usage{5, 1}.json()})
		}
	}
	tr := traceBytes(t, f.bytes(), Config{})
	rs := runs(t, tr, 300)
	n := 0
	for _, r := range rs {
		n += len(r.find("pi.compaction"))
	}
	if n != 3 || tr.tracer.Stats().Entries != 1203 {
		t.Errorf("%d compactions, %+v", n, tr.tracer.Stats())
	}
}

// plain captures content as it is, to see what reaches spans.
type plain struct{}

func (plain) Scrub(s string) string { return s }
func (plain) InputMessages(m [][]byte) string {
	return string(bytes.Join(m, nil))
}
func (plain) OutputMessages(m [][]byte) string   { return string(bytes.Join(m, nil)) }
func (plain) SystemInstructions(m []byte) string { return string(m) }
func (plain) ToolArguments(a []byte) string      { return string(a) }
func (plain) ToolResult(r []byte) string         { return string(r) }

// With content capture, prompts, answers, tool arguments and results, the
// command of a ! run and the full cwd reach the spans.
func TestContentCapture(t *testing.T) {
	f := newFile(nil)
	f.message(map[string]any{"role": "bashExecution", "command": "secret-command", "output": "o", "exitCode": 0, "timestamp": ms(f.now)})
	f.user("secret-prompt")
	f.assistant("toolUse", usage{10, 1}, "bash:c1")
	f.result("c1", false)
	f.assistant("stop", usage{10, 1})
	tr := traceBytes(t, f.bytes(), Config{Content: plain{}})
	var all strings.Builder
	var walk func(*node)
	walk = func(n *node) {
		for _, a := range n.s.Attributes() {
			all.WriteString(string(a.Key) + "=" + a.Value.String() + "\n")
		}
		for _, e := range n.s.Events() {
			for _, a := range e.Attributes {
				all.WriteString(string(a.Key) + "=" + a.Value.String() + "\n")
			}
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	for _, r := range tr.roots {
		walk(r)
	}
	for _, want := range []string{"pi.bash.command=secret-command", "secret-prompt", "gen_ai.tool.call.arguments={\"command\":\"secret-arg\"}", "secret-output", "pi.cwd=/home/me/proj", "answer text"} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("%q not captured", want)
		}
	}
}

// A generated history (the benchmark's input) traces run for run: every
// prompt a trace, every retry and compaction a span, nothing damaged.
func TestGeneratedHistory(t *testing.T) {
	var buf bytes.Buffer
	gen, err := sessiongen.Write(&buf, sessiongen.Config{Size: 3e6, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	tr := traceBytes(t, buf.Bytes(), Config{})
	rs := runs(t, tr, int(gen.Runs))
	var tools, retries, compactions int64
	for _, r := range rs {
		tools += int64(len(r.find("execute_tool")))
		retries += int64(len(r.find("pi.retry")))
		compactions += int64(len(r.find("pi.compaction")))
		if r.str("pi.outcome") != "ok" {
			t.Fatalf("run outcome %s:\n%s", r.str("pi.outcome"), r.shape())
		}
	}
	if tools != gen.ToolCalls || retries != gen.Retries || compactions != gen.Compactions {
		t.Errorf("traced %d tools, %d retries, %d compactions; generated %d, %d, %d", tools, retries, compactions, gen.ToolCalls, gen.Retries, gen.Compactions)
	}
	if st := tr.tracer.Stats(); st.Damaged != 0 || st.Lines != gen.Lines {
		t.Errorf("stats %+v, generated %d lines", st, gen.Lines)
	}
}

// The session file the real Pi 1.6.0 TUI wrote in tmux (see
// internal/testutil/capture's TestSessionCaptureTUI).
func TestTUISession(t *testing.T) {
	b := readCapture(t, "pi-1.6.0", "tui.jsonl")
	tr := traceBytes(t, b, Config{})
	rs := runs(t, tr, 2)
	first, second := rs[0], rs[1]
	if r := first.find("pi.retry"); len(r) != 1 || r[0].str("pi.retry.outcome") != "success" || first.str("pi.outcome") != "ok" {
		t.Errorf("first run (529, then an answer):\n%s", first.shape())
	}
	tools := second.find("execute_tool")
	if len(tools) != 2 || second.str("pi.tool_errors") != "1" || len(second.find("pi.compaction")) != 1 {
		t.Errorf("second run (two tools, one failing, then /compact):\n%s", second.shape())
	}
	bash := roots(tr, "pi.bash")
	if len(bash) != 1 || bash[0].str("pi.bash.exit_code") != "0" {
		t.Fatalf("%d pi.bash traces for the ! command", len(bash))
	}
	if !bash[0].s.StartTime().After(first.s.EndTime()) || !bash[0].s.StartTime().Before(second.s.StartTime()) {
		t.Error("the ! command is not between the two runs")
	}
	for _, r := range rs {
		if r.str("gen_ai.conversation.id") != tr.tracer.SessionID() || tr.tracer.SessionID() == "" {
			t.Errorf("conversation id %s, session %s", r.str("gen_ai.conversation.id"), tr.tracer.SessionID())
		}
	}
}

// A run traced by Idle, then a compaction Pi wrote after it: a follower
// restarted at the committed offset traces neither again.
func TestRestartAfterIdle(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	f.assistant("stop", usage{10, 1})
	quiet := f.now.Add(time.Hour)
	idleAt := len(f.bytes())
	f.entry("compaction", map[string]any{"summary": "s", "firstKeptEntryId": f.prev, "tokensBefore": 100, "usage": usage{5, 1}.json()})
	f.user("next")
	f.assistant("stop", usage{10, 1})
	b := f.bytes()

	rec := tracetest.NewSpanRecorder()
	ids := spanid.NewGenerator(nil)
	tr := New(Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(ids))})
	feed(tr, b[:idleAt])
	if !tr.Idle(quiet, time.Minute) {
		t.Fatal("Idle did not trace the answered run")
	}
	committed := tr.Committed()
	// Restarted here: from the start, skipping what was committed.
	restarted := traceBytes(t, b, Config{Runs: from(committed, time.Time{})})
	rs := runs(t, restarted, 1)
	if !strings.Contains(rs[0].str("gen_ai.conversation.id"), "sess-1") || restarted.tracer.Stats().Skipped != 1 {
		t.Errorf("restart: %+v", restarted.tracer.Stats())
	}
	var first string
	for _, s := range rec.Ended() {
		if s.Name() == "invoke_agent pi" {
			first = s.SpanContext().TraceID().String()
		}
	}
	if rs[0].s.SpanContext().TraceID().String() == first {
		t.Error("the restart traced the first run again")
	}
	// The follower that was not restarted: the late compaction is a trace
	// of its own, as the stream shows a compaction with no run open.
	rec2 := tracetest.NewSpanRecorder()
	tr2 := New(Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec2))})
	feed(tr2, b[:idleAt])
	tr2.Idle(quiet, time.Minute)
	rest := b[idleAt:]
	off := int64(idleAt)
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		tr2.Line(off, rest[:i])
		off += int64(i) + 1
		rest = rest[i+1:]
	}
	tr2.Close(agentmap.Ending{Reason: vocab.EndEOF})
	var idle []sdktrace.ReadOnlySpan
	for _, s := range rec2.Ended() {
		if s.Name() == "pi.compaction" && !s.Parent().IsValid() {
			idle = append(idle, s)
		}
	}
	if len(idle) != 1 || tr2.Stats().Runs != 2 {
		t.Errorf("%d compactions of their own, %d runs; want 1 and 2", len(idle), tr2.Stats().Runs)
	}
}

// Tracers that share one IDs (a follower of many files) may trace in
// parallel and still give each file its own ids.
func TestSharedIDsConcurrently(t *testing.T) {
	names := []string{"threshold-compaction", "parallel-tools", "rpc-steer-follow-up", "two-prompts"}
	alone := map[string]string{}
	// Every span of the traces whose root names the session.
	idsOf := func(spans []sdktrace.ReadOnlySpan, session string) string {
		traces := map[string]bool{}
		for _, s := range spans {
			for _, a := range s.Attributes() {
				if string(a.Key) == "gen_ai.conversation.id" && a.Value.AsString() == session {
					traces[s.SpanContext().TraceID().String()] = true
				}
			}
		}
		var out []string
		for _, s := range spans {
			if traces[s.SpanContext().TraceID().String()] {
				out = append(out, s.Name()+s.SpanContext().TraceID().String()+s.SpanContext().SpanID().String())
			}
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	for _, n := range names {
		tr := traceBytes(t, readCapture(t, "pi-1.6.0", n+".jsonl"), Config{})
		var spans []sdktrace.ReadOnlySpan
		var walk func(*node)
		walk = func(x *node) {
			spans = append(spans, x.s)
			for _, c := range x.children {
				walk(c)
			}
		}
		for _, r := range tr.roots {
			walk(r)
		}
		alone[n] = idsOf(spans, tr.tracer.SessionID())
	}
	rec := tracetest.NewSpanRecorder()
	ids := spanid.NewGenerator(nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(ids))
	var wg sync.WaitGroup
	sessions := make([]string, len(names))
	for i, n := range names {
		b := readCapture(t, "pi-1.6.0", n+".jsonl")
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Over and over, so that the goroutines do overlap.
			for range 30 {
				tr := New(Config{TracerProvider: tp})
				feed(tr, b)
				tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
				sessions[i] = tr.SessionID()
			}
		}()
	}
	wg.Wait()
	for i, n := range names {
		if got := idsOf(rec.Ended(), sessions[i]); !sameSet(got, alone[n]) || alone[n] == "" {
			t.Errorf("%s: ids traced in parallel differ from ids traced alone", n)
		}
	}
}

// sameSet reports whether the comma-separated lists hold the same items,
// counting repeats once.
func sameSet(a, b string) bool {
	set := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, x := range strings.Split(s, ",") {
			m[x] = true
		}
		return m
	}
	sa, sb := set(a), set(b)
	if len(sa) != len(sb) {
		return false
	}
	for k := range sa {
		if !sb[k] {
			return false
		}
	}
	return true
}
