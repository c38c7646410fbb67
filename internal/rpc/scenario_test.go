package rpc_test

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper"
)

// Replays of sessions recorded from the real Pi 1.6.0 (rpctest scenarios).

func play(t *testing.T, name string, end mapper.Ending) ([]*node, *harness) {
	t.Helper()
	h := newHarness(t)
	h.play(transcript(t, name))
	f := h.close(end)
	st := h.tr.Stats()
	if st.Pending != 0 || st.OpenDialogs != 0 || st.Held != 0 {
		t.Errorf("state left after close: %+v", st)
	}
	return f, h
}

func TestTwoPromptsWithGetState(t *testing.T) {
	f, h := play(t, "prompt-state", exit0)
	wantShapes(t, f, `
pi.rpc get_state
---
invoke_agent pi
  pi.rpc prompt
  pi.agent_run
    pi.turn
      chat fake-model
---
pi.rpc get_state
---
invoke_agent pi
  pi.rpc prompt
  pi.agent_run
    pi.turn
      chat fake-model
`)
	session := h.m.SessionID()
	if session == "" {
		t.Fatal("session id not learned from get_state")
	}
	for i, root := range findAll(f, "invoke_agent pi") {
		wantAttrs(t, root, map[string]string{
			"gen_ai.conversation.id": session,
			"pi.end_reason":          "settled",
			"pi.outcome":             "ok",
		})
		p := root.find("pi.rpc prompt")[0]
		if p.s.SpanKind() != trace.SpanKindClient {
			t.Errorf("prompt span kind %v", p.s.SpanKind())
		}
		wantAttrs(t, p, map[string]string{
			"pi.rpc.id":          []string{"p1", "p2"}[i],
			"pi.rpc.command":     "prompt",
			"pi.rpc.success":     "true",
			"pi.rpc.disposition": "started",
		})
		// The root opens at the prompt, before the response and agent_start.
		if !root.s.StartTime().Equal(p.s.StartTime()) {
			t.Errorf("root starts %v, prompt %v", root.s.StartTime(), p.s.StartTime())
		}
		if !p.s.EndTime().Before(root.find("pi.agent_run")[0].s.StartTime()) &&
			!p.s.EndTime().Equal(root.find("pi.agent_run")[0].s.StartTime()) {
			t.Error("prompt response traced after agent_start")
		}
		for _, n := range allSpans([]*node{p}) {
			for _, kv := range n.s.Attributes() {
				if strings.Contains(kv.Value.Emit(), "prompt") && kv.Key != "pi.rpc.command" {
					t.Errorf("%s carries prompt text in %s", n.name(), kv.Key)
				}
			}
		}
	}
	// Outside a run a command is a short trace of its own, linked to the
	// run before it and tagged with the session.
	s0, s1 := f[0], f[2]
	if len(s0.s.Links()) != 0 {
		t.Error("first get_state links to a run that did not exist")
	}
	if l := s1.s.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != f[1].s.SpanContext().SpanID() {
		t.Errorf("second get_state links %v, want the first run", l)
	}
	wantAttrs(t, s1, map[string]string{"gen_ai.conversation.id": session, "pi.rpc.id": "s1", "pi.rpc.success": "true"})
	if st := h.tr.Stats(); st.Runs != 2 || st.Commands != 4 || st.Responses != 4 || st.UnmatchedResponses != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestSteerAndFollowUpLandInTheRun(t *testing.T) {
	f, _ := play(t, "steer-follow-up", exit0)
	if len(f) != 1 {
		t.Fatalf("want one trace:\n%s", shapes(f))
	}
	root := f[0]
	if n := len(root.find("pi.turn")); n != 3 {
		t.Errorf("%d turns, want 3 (the tool turn, the steer, the follow-up)", n)
	}
	for _, c := range []struct{ name, id, kind string }{{"pi.rpc steer", "st1", "steer"}, {"pi.rpc follow_up", "fu1", "follow_up"}} {
		n := byAttr(t, f, c.name, "pi.rpc.id", c.id)
		if n.s.Parent().SpanID() != root.s.SpanContext().SpanID() {
			t.Errorf("%s not under the root", c.name)
		}
		wantAttrs(t, n, map[string]string{"pi.rpc.disposition": "queued", "pi.rpc.success": "true"})
		found := false
		for _, e := range root.events("pi.rpc.queued") {
			if eventAttr(e, "pi.rpc.id") == c.id {
				found = true
				if got := eventAttr(e, "pi.queue.kind"); got != c.kind {
					t.Errorf("queued %s kind %s", c.id, got)
				}
			}
		}
		if !found {
			t.Errorf("no pi.rpc.queued event for %s", c.id)
		}
	}
}

func TestManualCompactIsTracedUnderItsCommand(t *testing.T) {
	f, _ := play(t, "compact", exit0)
	c := byAttr(t, f, "pi.rpc compact", "pi.rpc.id", "c1")
	if len(c.children) != 1 || c.children[0].name() != "pi.compaction" {
		t.Fatalf("compact:\n%s", c.shape())
	}
	wantAttrs(t, c.children[0], map[string]string{
		"pi.compaction.reason":  "manual",
		"pi.compaction.outcome": "ok",
	})
	if c.children[0].str("pi.compaction.tokens_before") == "<none>" {
		t.Error("no tokens_before")
	}
	if len(c.s.Links()) != 1 {
		t.Error("an idle command should link to the last run")
	}
}

func TestDirectBash(t *testing.T) {
	f, _ := play(t, "bash", exit0)
	b1 := byAttr(t, f, "pi.rpc bash", "pi.rpc.id", "b1")
	wantAttrs(t, b1, map[string]string{
		"pi.bash.output_chunks": "2",
		"pi.bash.output_bytes":  "8",
		"pi.bash.exit_code":     "0",
		"pi.bash.cancelled":     "false",
	})
	b2 := byAttr(t, f, "pi.rpc bash", "pi.rpc.id", "b2")
	wantAttrs(t, b2, map[string]string{
		"pi.bash.output_chunks": "1",
		"pi.bash.output_bytes":  "8",
		"pi.bash.exit_code":     "<none>",
		"pi.bash.cancelled":     "true",
	})
	ab := byAttr(t, f, "pi.rpc abort_bash", "pi.rpc.id", "ab1")
	if !ab.s.EndTime().Before(b2.s.EndTime()) {
		t.Error("abort_bash should answer before the cancelled bash")
	}
	for _, n := range allSpans(f) {
		for _, kv := range n.s.Attributes() {
			if v := kv.Value.Emit(); strings.Contains(v, "started\n") || strings.Contains(v, "echo") {
				t.Errorf("%s: %s leaks bash content: %q", n.name(), kv.Key, v)
			}
		}
	}
}

func TestExtensionDialogs(t *testing.T) {
	f, h := play(t, "extension-ui", exit0)
	wantShapes(t, f, `
invoke_agent pi
  pi.rpc prompt
  pi.agent_run
    pi.turn
      chat fake-model
      execute_tool bash
      pi.extension_ui confirm
    pi.turn
      chat fake-model
      execute_tool bash
      pi.extension_ui confirm
    pi.turn
      chat fake-model
---
pi.rpc prompt
  pi.extension_ui select
---
pi.rpc prompt
  pi.extension_ui input
`)
	confirms := findAll(f, "pi.extension_ui confirm")
	for i, want := range []string{"true", "false"} {
		wantAttrs(t, confirms[i], map[string]string{"pi.ui.outcome": "confirmed", "pi.ui.confirmed": want, "pi.ui.method": "confirm"})
		if confirms[i].str("pi.ui.id") == "<none>" {
			t.Error("no pi.ui.id")
		}
	}
	// The notify calls around the dialogs are events where they happened.
	for _, turn := range findAll(f, "pi.turn")[:2] {
		if ev := turn.events("pi.extension_ui"); len(ev) != 1 || eventAttr(ev[0], "pi.ui.method") != "notify" {
			t.Errorf("turn events %v", turn.s.Events())
		}
	}
	// A /command prompt is handled: no run, its span is its own trace and
	// holds the dialogs it opened.
	pick := f[1]
	wantAttrs(t, pick, map[string]string{"pi.rpc.id": "p2", "pi.rpc.disposition": "handled"})
	wantAttrs(t, pick.children[0], map[string]string{"pi.ui.outcome": "cancelled"})
	if ev := pick.events("pi.extension_ui"); len(ev) != 1 || eventAttr(ev[0], "pi.ui.method") != "setStatus" {
		t.Errorf("pick events %v", pick.s.Events())
	}
	ask := f[2].children[0]
	wantAttrs(t, ask, map[string]string{"pi.ui.outcome": "timed_out", "pi.ui.timeout_ms": "200"})
	if d := ask.s.EndTime().Sub(ask.s.StartTime()); d != 200*time.Millisecond {
		t.Errorf("timed-out dialog lasted %v, want its 200ms timeout", d)
	}
	if st := h.tr.Stats(); st.Dialogs != 4 || st.TimedOut != 1 || st.UIEvents != 4 || st.UnmatchedUI != 0 {
		t.Errorf("stats %+v", st)
	}
	if len(findAll(f, "invoke_agent pi")) != 1 {
		t.Error("a handled prompt opened a root")
	}
}

func TestExtensionErrors(t *testing.T) {
	f, h := play(t, "extension-error", exit0)
	if st := h.tr.Stats(); st.ExtensionErrors != 2 {
		t.Errorf("extension errors %d, want 2", st.ExtensionErrors)
	}
	turn := findAll(f, "pi.turn")[0]
	ev := turn.events("pi.extension_error")
	if len(ev) != 1 || eventAttr(ev[0], "pi.extension.event") != "turn_end" {
		t.Fatalf("turn events %v", turn.s.Events())
	}
	if eventAttr(ev[0], "pi.extension.error") != "<none>" {
		t.Error("error text recorded without content capture")
	}
	boom := byAttr(t, f, "pi.rpc prompt", "pi.rpc.id", "p2")
	ev = boom.events("pi.extension_error")
	if len(ev) != 1 || eventAttr(ev[0], "pi.extension.path") != "command:boom" {
		t.Fatalf("/boom events %v", boom.s.Events())
	}
	if root := findAll(f, "invoke_agent pi")[0]; root.str("pi.extension_errors") != "1" {
		t.Errorf("root pi.extension_errors %s", root.str("pi.extension_errors"))
	}
}

func TestAbortMidTool(t *testing.T) {
	f, _ := play(t, "abort-mid-tool", exit0)
	root := f[0]
	wantAttrs(t, root, map[string]string{"pi.outcome": "aborted", "pi.aborted": "true", "pi.end_reason": "settled"})
	a := byAttr(t, f, "pi.rpc abort", "pi.rpc.id", "a1")
	if a.s.Parent().SpanID() != root.s.SpanContext().SpanID() {
		t.Error("abort not under the run it aborted")
	}
	// Pi settles the run before it answers the abort.
	if a.s.EndTime().Before(root.s.EndTime()) {
		t.Error("abort answered before agent_settled")
	}
}

func TestBusyPromptRejectedAndQueued(t *testing.T) {
	f, _ := play(t, "busy", exit0)
	if len(f) != 1 {
		t.Fatalf("want one trace:\n%s", shapes(f))
	}
	p2 := byAttr(t, f, "pi.rpc prompt", "pi.rpc.id", "p2")
	wantAttrs(t, p2, map[string]string{"pi.rpc.success": "false", "error.type": "busy"})
	if p2.s.Status().Code != codes.Error || p2.s.Status().Description != "busy" {
		t.Errorf("p2 status %+v", p2.s.Status())
	}
	p3 := byAttr(t, f, "pi.rpc prompt", "pi.rpc.id", "p3")
	wantAttrs(t, p3, map[string]string{"pi.rpc.success": "true", "pi.rpc.disposition": "queued"})
	ev := f[0].events("pi.rpc.queued")
	if len(ev) != 1 || eventAttr(ev[0], "pi.queue.kind") != "follow_up" || eventAttr(ev[0], "pi.rpc.command") != "prompt" {
		t.Errorf("queued events %v", ev)
	}
	if n := len(f[0].find("pi.turn")); n != 3 {
		t.Errorf("%d turns, want 3: the queued prompt runs inside the same run", n)
	}
}

func TestMalformedLines(t *testing.T) {
	f, h := play(t, "malformed", exit0)
	if st := h.tr.Stats(); st.Commands != 9 || st.Responses != 9 || st.UnmatchedResponses != 0 {
		t.Fatalf("stats %+v", st)
	}
	parse := f[0]
	wantAttrs(t, parse, map[string]string{"pi.rpc.command": "parse", "pi.rpc.success": "false", "error.type": "parse_error"})
	if d := parse.s.Status().Description; d != "parse_error" {
		t.Errorf("parse status %q", d)
	}
	for i, n := range f[1:5] {
		if n.name() != "pi.rpc unknown" {
			t.Fatalf("line %d traced as %s", i+2, n.name())
		}
		wantAttrs(t, n, map[string]string{"pi.rpc.success": "false", "error.type": "unknown_command"})
	}
	wantAttrs(t, f[3], map[string]string{"pi.rpc.id": "x1"})
	wantAttrs(t, f[4], map[string]string{"pi.rpc.id": "x2", "pi.rpc.command": "unknown", "pi.rpc.type": "no_such_command"})
	wantAttrs(t, f[1], map[string]string{"pi.rpc.command": "unknown", "pi.rpc.type": "<none>"})
	p0 := f[5]
	wantAttrs(t, p0, map[string]string{"pi.rpc.id": "p0", "pi.rpc.success": "false"})
	if got := p0.s.Status().Description; got != "rpc_error" {
		t.Errorf("p0 status %q", got)
	}
	wantAttrs(t, f[6], map[string]string{"pi.rpc.id": "crlf", "pi.rpc.success": "true"})
	wantAttrs(t, f[7], map[string]string{"pi.rpc.id": "sep\u2028\u2029"})
	wantAttrs(t, f[8], map[string]string{"pi.rpc.id": "<none>", "pi.rpc.success": "true"})
	if h.m.SessionID() == "" {
		t.Error("session id not learned")
	}
}

func TestStdinEOFMidRun(t *testing.T) {
	f, _ := play(t, "eof-mid-run", exit0)
	root := f[0]
	wantAttrs(t, root, map[string]string{
		"pi.outcome": "unsettled", "pi.end_reason": "exit", "pi.exit_code": "0", "pi.settled": "false",
	})
	tool := root.find("execute_tool bash")[0]
	wantAttrs(t, tool, map[string]string{"pi.unfinished": "true"})
}

func TestSigtermMidTool(t *testing.T) {
	f, _ := play(t, "sigterm-mid-tool", mapper.Ending{Reason: mapper.EndSignal, ExitCode: 143, Signal: "SIGTERM"})
	root := f[0]
	wantAttrs(t, root, map[string]string{
		"pi.outcome": "unsettled", "pi.end_reason": "signal", "pi.exit_code": "143", "pi.signal": "SIGTERM",
	})
	if root.s.Status().Code != codes.Error {
		t.Error("unsettled root without error status")
	}
}
