package rpc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Replays of sessions recorded from the real Pi 1.6.0 (rpctest scenarios).

func play(t *testing.T, name string, end agentmap.Ending) ([]*spantree.Node, *harness) {
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
	session := h.m.SessionID()
	if session == "" {
		t.Fatal("session id not learned from get_state")
	}
	for i, root := range spantree.Find(f, "invoke_agent pi") {
		root.WantAttrs(t, map[string]string{
			"gen_ai.conversation.id": session,
			"pi.end_reason":          "settled",
			"pi.outcome":             "ok",
		})
		p := root.Find("pi.rpc prompt")[0]
		if p.Kind != "client" {
			t.Errorf("prompt span kind %v", p.Kind)
		}
		p.WantAttrs(t, map[string]string{
			"pi.rpc.id":          []string{"p1", "p2"}[i],
			"pi.rpc.command":     "prompt",
			"pi.rpc.success":     "true",
			"pi.rpc.disposition": "started",
		})
		// The root opens at the prompt, before the response and agent_start.
		if !root.Start.Equal(p.Start) {
			t.Errorf("root starts %v, prompt %v", root.Start, p.Start)
		}
		if !p.End.Before(root.Find("pi.agent_run")[0].Start) &&
			!p.End.Equal(root.Find("pi.agent_run")[0].Start) {
			t.Error("prompt response traced after agent_start")
		}
		for _, n := range spantree.All([]*spantree.Node{p}) {
			for k, v := range n.Attrs {
				if strings.Contains(v, "prompt") && k != "pi.rpc.command" {
					t.Errorf("%s carries prompt text in %s", n.Name, k)
				}
			}
		}
	}
	// Outside a run a command is a short trace of its own, linked to the
	// run before it and tagged with the session.
	s0, s1 := f[0], f[2]
	if len(s0.Links) != 0 {
		t.Error("first get_state links to a run that did not exist")
	}
	if l := s1.Links; len(l) != 1 || l[0].SpanID != f[1].SpanID {
		t.Errorf("second get_state links %v, want the first run", l)
	}
	s1.WantAttrs(t, map[string]string{"gen_ai.conversation.id": session, "pi.rpc.id": "s1", "pi.rpc.success": "true"})
	if st := h.tr.Stats(); st.Runs != 2 || st.Commands != 4 || st.Responses != 4 || st.UnmatchedResponses != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestSteerAndFollowUpLandInTheRun(t *testing.T) {
	f, _ := play(t, "steer-follow-up", exit0)
	if len(f) != 1 {
		t.Fatalf("want one trace:\n%s", spantree.Shape(f))
	}
	root := f[0]
	if n := len(root.Find("pi.turn")); n != 3 {
		t.Errorf("%d turns, want 3 (the tool turn, the steer, the follow-up)", n)
	}
	for _, c := range []struct{ name, id, kind string }{{"pi.rpc steer", "st1", "steer"}, {"pi.rpc follow_up", "fu1", "follow_up"}} {
		n := spantree.ByAttr(t, f, c.name, "pi.rpc.id", c.id)
		if n.ParentID != root.SpanID {
			t.Errorf("%s not under the root", c.name)
		}
		n.WantAttrs(t, map[string]string{"pi.rpc.disposition": "queued", "pi.rpc.success": "true"})
		found := false
		for _, e := range root.EventsNamed("pi.rpc.queued") {
			if e.Str("pi.rpc.id") == c.id {
				found = true
				if got := e.Str("pi.queue.kind"); got != c.kind {
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
	c := spantree.ByAttr(t, f, "pi.rpc compact", "pi.rpc.id", "c1")
	if len(c.Children) != 1 || c.Children[0].Name != "pi.compaction" {
		t.Fatalf("compact:\n%s", c.String())
	}
	c.Children[0].WantAttrs(t, map[string]string{
		"pi.compaction.reason":  "manual",
		"pi.compaction.outcome": "ok",
	})
	if c.Children[0].Str("pi.compaction.tokens_before") == "<none>" {
		t.Error("no tokens_before")
	}
	if len(c.Links) != 1 {
		t.Error("an idle command should link to the last run")
	}
}

func TestDirectBash(t *testing.T) {
	f, _ := play(t, "bash", exit0)
	// b1 runs to its end; b2 is cancelled by abort_bash after one chunk.
	for id, want := range map[string][4]string{"b1": {"2", "8", "0", "false"}, "b2": {"1", "8", "<none>", "true"}} {
		spantree.ByAttr(t, f, "pi.rpc bash", "pi.rpc.id", id).WantAttrs(t, map[string]string{
			"pi.bash.output_chunks": want[0], "pi.bash.output_bytes": want[1], "pi.bash.exit_code": want[2], "pi.bash.cancelled": want[3],
		})
	}
	b2 := spantree.ByAttr(t, f, "pi.rpc bash", "pi.rpc.id", "b2")
	ab := spantree.ByAttr(t, f, "pi.rpc abort_bash", "pi.rpc.id", "ab1")
	if !ab.End.Before(b2.End) {
		t.Error("abort_bash should answer before the cancelled bash")
	}
	for _, text := range []string{"started\n", "echo"} {
		for _, where := range spantree.Leaks(f, text) {
			t.Errorf("%s leaks bash content %q", where, text)
		}
	}
}

func TestExtensionDialogs(t *testing.T) {
	f, h := play(t, "extension-ui", exit0)
	confirms := spantree.Find(f, "pi.extension_ui confirm")
	for i, want := range []string{"true", "false"} {
		confirms[i].WantAttrs(t, map[string]string{"pi.ui.outcome": "confirmed", "pi.ui.confirmed": want, "pi.ui.method": "confirm"})
		if confirms[i].Str("pi.ui.id") == "<none>" {
			t.Error("no pi.ui.id")
		}
	}
	// The notify calls around the dialogs are events where they happened.
	for _, turn := range spantree.Find(f, "pi.turn")[:2] {
		if ev := turn.EventsNamed("pi.extension_ui"); len(ev) != 1 || ev[0].Str("pi.ui.method") != "notify" {
			t.Errorf("turn events %v", turn.Events)
		}
	}
	// A /command prompt is handled: no run, its span is its own trace and
	// holds the dialogs it opened.
	pick := f[1]
	pick.WantAttrs(t, map[string]string{"pi.rpc.id": "p2", "pi.rpc.disposition": "handled"})
	pick.Children[0].WantAttrs(t, map[string]string{"pi.ui.outcome": "cancelled"})
	if ev := pick.EventsNamed("pi.extension_ui"); len(ev) != 1 || ev[0].Str("pi.ui.method") != "setStatus" {
		t.Errorf("pick events %v", pick.Events)
	}
	ask := f[2].Children[0]
	ask.WantAttrs(t, map[string]string{"pi.ui.outcome": "timed_out", "pi.ui.timeout_ms": "200"})
	if d := ask.End.Sub(ask.Start); d != 200*time.Millisecond {
		t.Errorf("timed-out dialog lasted %v, want its 200ms timeout", d)
	}
	if st := h.tr.Stats(); st.Dialogs != 4 || st.TimedOut != 1 || st.UIEvents != 4 || st.UnmatchedUI != 0 {
		t.Errorf("stats %+v", st)
	}
	if len(spantree.Find(f, "invoke_agent pi")) != 1 {
		t.Error("a handled prompt opened a root")
	}
}

func TestExtensionErrors(t *testing.T) {
	f, h := play(t, "extension-error", exit0)
	if st := h.tr.Stats(); st.ExtensionErrors != 2 {
		t.Errorf("extension errors %d, want 2", st.ExtensionErrors)
	}
	turn := spantree.Find(f, "pi.turn")[0]
	ev := turn.EventsNamed("pi.extension_error")
	if len(ev) != 1 || ev[0].Str("pi.extension.event") != "turn_end" {
		t.Fatalf("turn events %v", turn.Events)
	}
	if ev[0].Str("pi.extension.error") != "<none>" {
		t.Error("error text recorded without content capture")
	}
	boom := spantree.ByAttr(t, f, "pi.rpc prompt", "pi.rpc.id", "p2")
	ev = boom.EventsNamed("pi.extension_error")
	if len(ev) != 1 || ev[0].Str("pi.extension.path") != "command:boom" {
		t.Fatalf("/boom events %v", boom.Events)
	}
	if root := spantree.Find(f, "invoke_agent pi")[0]; root.Str("pi.extension_errors") != "1" {
		t.Errorf("root pi.extension_errors %s", root.Str("pi.extension_errors"))
	}
}

func TestAbortMidTool(t *testing.T) {
	f, _ := play(t, "abort-mid-tool", exit0)
	root := f[0]
	root.WantAttrs(t, map[string]string{"pi.outcome": "aborted", "pi.aborted": "true", "pi.end_reason": "settled"})
	a := spantree.ByAttr(t, f, "pi.rpc abort", "pi.rpc.id", "a1")
	if a.ParentID != root.SpanID {
		t.Error("abort not under the run it aborted")
	}
	// Pi settles the run before it answers the abort.
	if a.End.Before(root.End) {
		t.Error("abort answered before agent_settled")
	}
}

func TestBusyPromptRejectedAndQueued(t *testing.T) {
	f, _ := play(t, "busy", exit0)
	if len(f) != 1 {
		t.Fatalf("want one trace:\n%s", spantree.Shape(f))
	}
	p2 := spantree.ByAttr(t, f, "pi.rpc prompt", "pi.rpc.id", "p2")
	p2.WantAttrs(t, map[string]string{"pi.rpc.success": "false", "error.type": "busy"})
	if !p2.Failed() || p2.Status.Message != "busy" {
		t.Errorf("p2 status %+v", p2.Status)
	}
	p3 := spantree.ByAttr(t, f, "pi.rpc prompt", "pi.rpc.id", "p3")
	p3.WantAttrs(t, map[string]string{"pi.rpc.success": "true", "pi.rpc.disposition": "queued"})
	ev := f[0].EventsNamed("pi.rpc.queued")
	if len(ev) != 1 || ev[0].Str("pi.queue.kind") != "follow_up" || ev[0].Str("pi.rpc.command") != "prompt" {
		t.Errorf("queued events %v", ev)
	}
	if n := len(f[0].Find("pi.turn")); n != 3 {
		t.Errorf("%d turns, want 3: the queued prompt runs inside the same run", n)
	}
}

func TestMalformedLines(t *testing.T) {
	f, h := play(t, "malformed", exit0)
	if st := h.tr.Stats(); st.Commands != 9 || st.Responses != 9 || st.UnmatchedResponses != 0 {
		t.Fatalf("stats %+v", st)
	}
	parse := f[0]
	parse.WantAttrs(t, map[string]string{"pi.rpc.command": "parse", "pi.rpc.success": "false", "error.type": "parse_error"})
	if d := parse.Status.Message; d != "parse_error" {
		t.Errorf("parse status %q", d)
	}
	for i, n := range f[1:5] {
		if n.Name != "pi.rpc unknown" {
			t.Fatalf("line %d traced as %s", i+2, n.Name)
		}
		n.WantAttrs(t, map[string]string{"pi.rpc.success": "false", "error.type": "unknown_command"})
	}
	f[3].WantAttrs(t, map[string]string{"pi.rpc.id": "x1"})
	f[4].WantAttrs(t, map[string]string{"pi.rpc.id": "x2", "pi.rpc.command": "unknown", "pi.rpc.type": "no_such_command"})
	f[1].WantAttrs(t, map[string]string{"pi.rpc.command": "unknown", "pi.rpc.type": "<none>"})
	p0 := f[5]
	p0.WantAttrs(t, map[string]string{"pi.rpc.id": "p0", "pi.rpc.success": "false"})
	if got := p0.Status.Message; got != "rpc_error" {
		t.Errorf("p0 status %q", got)
	}
	f[6].WantAttrs(t, map[string]string{"pi.rpc.id": "crlf", "pi.rpc.success": "true"})
	f[7].WantAttrs(t, map[string]string{"pi.rpc.id": "sep\u2028\u2029"})
	f[8].WantAttrs(t, map[string]string{"pi.rpc.id": "<none>", "pi.rpc.success": "true"})
	if h.m.SessionID() == "" {
		t.Error("session id not learned")
	}
}

func TestStdinEOFMidRun(t *testing.T) {
	f, _ := play(t, "eof-mid-run", exit0)
	root := f[0]
	root.WantAttrs(t, map[string]string{
		"pi.outcome": "unsettled", "pi.end_reason": "exit", "pi.exit_code": "0", "pi.settled": "false",
	})
	tool := root.Find("execute_tool bash")[0]
	tool.WantAttrs(t, map[string]string{"pi.unfinished": "true"})
}

func TestSigtermMidTool(t *testing.T) {
	f, _ := play(t, "sigterm-mid-tool", agentmap.Ending{Reason: vocab.EndSignal, ExitCode: 143, Signal: "SIGTERM"})
	root := f[0]
	root.WantAttrs(t, map[string]string{
		"pi.outcome": "unsettled", "pi.end_reason": "signal", "pi.exit_code": "143", "pi.signal": "SIGTERM",
	})
	if !root.Failed() {
		t.Error("unsettled root without error status")
	}
}
