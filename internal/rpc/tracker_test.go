package rpc_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Synthetic sessions for what the recorded ones do not show. Record
// shapes follow Pi 1.6.0.

const (
	started = `{"type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}`
	settled = `{"type":"agent_settled","aborted":false}`
)

// run feeds a minimal run: agent_start … agent_settled.
func (h *harness) run() {
	h.out(`{"type":"agent_start"}`)
	h.out(`{"type":"turn_start"}`)
	h.out(`{"type":"turn_end","message":{"role":"assistant","content":[],"stopReason":"stop"}}`)
	h.out(`{"type":"agent_end","messages":[],"willRetry":false}`)
	h.out(settled)
}

func withID(rec, id string) string {
	return strings.Replace(rec, `{"type":"response"`, `{"id":"`+id+`","type":"response"`, 1)
}

func TestPreflightWorkLandsInTheRun(t *testing.T) {
	// An input handler asks before the prompt is accepted, and Pi compacts
	// before the run: both happen before the response that says a run
	// started, and both belong to that run.
	h := newHarness(t)
	h.in(`{"id":"p1","type":"prompt","message":"go"}`)
	h.out(`{"type":"extension_ui_request","id":"u1","method":"confirm","title":"Send?","message":"really"}`)
	h.in(`{"type":"extension_ui_response","id":"u1","confirmed":true}`)
	h.out(`{"type":"compaction_start","reason":"threshold"}`)
	h.out(`{"type":"compaction_end","reason":"threshold","result":{"tokensBefore":10,"estimatedTokensAfter":5},"aborted":false,"willRetry":false}`)
	h.out(withID(started, "p1"))
	h.run()
	f := h.close(exit0)
	wantShapes(t, f, `
invoke_agent pi
  pi.rpc prompt
    pi.extension_ui confirm
  pi.compaction
  pi.agent_run
    pi.turn
`)
	if st := h.tr.Stats(); st.Held != 0 || st.LookaheadForced != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestHandledPromptWithItsOwnRun(t *testing.T) {
	// An extension command that sends a message runs a whole run before Pi
	// answers "handled": the run is its own trace, the prompt another.
	h := newHarness(t)
	h.in(`{"id":"p1","type":"prompt","message":"/cmd"}`)
	h.run()
	h.out(`{"id":"p1","type":"response","command":"prompt","success":true,"data":{"disposition":"handled"}}`)
	f := h.close(exit0)
	wantShapes(t, f, `
pi.rpc prompt
---
invoke_agent pi
  pi.agent_run
    pi.turn
`)
	f[0].WantAttrs(t, map[string]string{"pi.rpc.disposition": "handled"})
	f[1].WantAttrs(t, map[string]string{"pi.outcome": "ok"})
}

func TestPromptsWithoutIDsMatchInOrder(t *testing.T) {
	h := newHarness(t)
	h.in(`{"type":"prompt","message":"one"}`)
	h.in(`{"type":"prompt","message":"two"}`)
	h.out(started)
	h.out(`{"type":"response","command":"prompt","success":false,"error":"Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."}`)
	h.run()
	f := h.close(exit0)
	wantShapes(t, f, `
invoke_agent pi
  pi.rpc prompt
  pi.rpc prompt !
  pi.agent_run
    pi.turn
`)
	ps := f[0].Find("pi.rpc prompt")
	ps[0].WantAttrs(t, map[string]string{"pi.rpc.success": "true", "pi.rpc.disposition": "started", "pi.rpc.id": "<none>"})
	ps[1].WantAttrs(t, map[string]string{"pi.rpc.success": "false", "error.type": "busy"})
}

func TestResponsesCorrelateByIDNotOrder(t *testing.T) {
	h := newHarness(t)
	h.in(`{"id":"a","type":"get_state"}`)
	h.in(`{"id":7.0,"type":"get_state"}`)
	h.out(`{"id":7,"type":"response","command":"get_state","success":true,"data":{"sessionId":"S"}}`)
	h.wait(time.Second)
	h.out(`{"id":"a","type":"response","command":"get_state","success":true,"data":{"sessionId":"S"}}`)
	f := h.close(exit0)
	a := spantree.ByAttr(t, f, "pi.rpc get_state", "pi.rpc.id", "a")
	n := spantree.ByAttr(t, f, "pi.rpc get_state", "pi.rpc.id", "7")
	if !n.End.Before(a.End) || a.End.Sub(a.Start) < time.Second {
		t.Error("responses matched by order, not id")
	}
	if h.tr.Stats().UnmatchedResponses != 0 {
		t.Error("unmatched responses")
	}
}

func TestStartedPromptWhileTheLastRunSettles(t *testing.T) {
	// The controller prompts as the run settles: the tracker sees the
	// prompt while the old run is open, Pi starts a new run for it.
	h := newHarness(t)
	h.in(`{"id":"p1","type":"prompt","message":"one"}`)
	h.out(withID(started, "p1"))
	h.out(`{"type":"agent_start"}`)
	h.in(`{"id":"p2","type":"prompt","message":"two"}`)
	h.out(`{"type":"agent_end","messages":[],"willRetry":false}`)
	h.out(settled)
	h.out(withID(started, "p2"))
	h.run()
	f := h.close(exit0)
	wantShapes(t, f, `
invoke_agent pi
  pi.rpc prompt
  pi.agent_run
---
invoke_agent pi
  pi.rpc prompt
  pi.agent_run
    pi.turn
`)
	p2 := f[1].Find("pi.rpc prompt")[0]
	p2.WantAttrs(t, map[string]string{"pi.rpc.id": "p2"})
	if !f[1].Start.Equal(p2.Start) {
		t.Error("the second root should start at its prompt")
	}
}

func TestLookaheadLimits(t *testing.T) {
	t.Run("records, run started", func(t *testing.T) {
		h := newHarness(t, rpc.WithLookahead(4, 0, 0))
		h.in(`{"id":"p1","type":"prompt","message":"go"}`)
		h.run() // 5 records: over the limit before the response
		if st := h.tr.Stats(); st.LookaheadForced != 1 || st.Held != 0 {
			t.Fatalf("stats %+v", st)
		}
		h.out(withID(started, "p1"))
		f := h.close(exit0)
		wantShapes(t, f, `
invoke_agent pi
  pi.rpc prompt
  pi.agent_run
    pi.turn
`)
	})
	t.Run("time, nothing started", func(t *testing.T) {
		h := newHarness(t, rpc.WithLookahead(0, 0, time.Second))
		h.in(`{"id":"p1","type":"prompt","message":"/slow"}`)
		h.out(`{"type":"extension_ui_request","id":"u1","method":"input","title":"?"}`)
		h.wait(2 * time.Second)
		h.in(`{"type":"extension_ui_response","id":"u1","value":"x"}`)
		if st := h.tr.Stats(); st.LookaheadForced != 1 || st.Held != 0 {
			t.Fatalf("stats %+v", st)
		}
		h.out(`{"id":"p1","type":"response","command":"prompt","success":true,"data":{"disposition":"handled"}}`)
		f := h.close(exit0)
		wantShapes(t, f, `
pi.rpc prompt
  pi.extension_ui input
`)
		f[0].Children[0].WantAttrs(t, map[string]string{"pi.ui.outcome": "value"})
	})
	t.Run("bytes", func(t *testing.T) {
		h := newHarness(t, rpc.WithLookahead(0, 100, 0))
		h.in(`{"id":"p1","type":"prompt","message":"go"}`)
		h.out(`{"type":"extension_ui_request","id":"u1","method":"notify","message":"` + strings.Repeat("x", 200) + `"}`)
		if st := h.tr.Stats(); st.LookaheadForced != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestCloseTracesHeldRecordsAndEndsWhatIsOpen(t *testing.T) {
	h := newHarness(t)
	h.in(`{"id":"b","type":"bash","command":"sleep 100"}`)
	h.out(`{"type":"bash_execution_update","id":"b","delta":"x"}`)
	h.in(`{"id":"p1","type":"prompt","message":"never answered"}`)
	h.out(`{"type":"extension_ui_request","id":"u1","method":"select","title":"?","options":["a"],"timeout":60000}`)
	if h.tr.Stats().Held == 0 {
		t.Fatal("nothing held while the prompt waits for its response")
	}
	f := h.close(agentmap.Ending{Reason: vocab.EndSignal, ExitCode: 143, Signal: "SIGTERM"})
	wantShapes(t, f, `
pi.rpc bash !
---
pi.rpc prompt !
  pi.extension_ui select
`)
	for _, n := range spantree.All(f) {
		if n.Str("pi.unfinished") != "true" || n.Str("pi.end_reason") != "signal" {
			t.Errorf("%s: unfinished %s, end_reason %s", n.Name, n.Str("pi.unfinished"), n.Str("pi.end_reason"))
		}
	}
	f[0].WantAttrs(t, map[string]string{"pi.bash.output_chunks": "1", "pi.bash.output_bytes": "1"})
	if !f[0].Failed() {
		t.Error("unanswered command without error status")
	}
	f[1].Children[0].WantAttrs(t, map[string]string{"pi.ui.outcome": "unanswered"})
}

func TestDialogTimeoutAndLateAnswer(t *testing.T) {
	h := newHarness(t)
	h.in(`{"id":"c","type":"prompt","message":"/x"}`)
	h.out(`{"type":"extension_ui_request","id":"u1","method":"confirm","title":"?","message":"?","timeout":1500}`)
	h.wait(2 * time.Second)
	h.in(`{"type":"extension_ui_response","id":"u1","confirmed":true}`) // too late: Pi already gave up
	h.out(`{"id":"c","type":"response","command":"prompt","success":true,"data":{"disposition":"handled"}}`)
	f := h.close(exit0)
	d := f[0].Children[0]
	d.WantAttrs(t, map[string]string{"pi.ui.outcome": "timed_out", "pi.ui.timeout_ms": "1500", "pi.ui.confirmed": "<none>"})
	if got := d.End.Sub(d.Start); got != 1500*time.Millisecond {
		t.Errorf("dialog lasted %v", got)
	}
	if st := h.tr.Stats(); st.UnmatchedUI != 1 || st.TimedOut != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestDialogAnswers(t *testing.T) {
	h := newHarness(t)
	h.in(`{"id":"c","type":"prompt","message":"/x"}`)
	for i, answer := range []string{`"value":"secret pick"`, `"cancelled":true`, `"confirmed":false`, `"value":null`, ``} {
		id := fmt.Sprintf("u%d", i)
		h.out(`{"type":"extension_ui_request","id":"` + id + `","method":"select","title":"t","options":["secret pick"]}`)
		sep := ","
		if answer == "" {
			sep = ""
		}
		h.in(`{"type":"extension_ui_response","id":"` + id + `"` + sep + answer + `}`)
	}
	h.out(`{"id":"c","type":"response","command":"prompt","success":true,"data":{"disposition":"handled"}}`)
	f := h.close(exit0)
	var got []string
	for _, d := range f[0].Children {
		got = append(got, d.Str("pi.ui.outcome"))
		for _, where := range spantree.Leaks([]*spantree.Node{d}, "secret") {
			t.Errorf("dialog answer leaked into %s", where)
		}
	}
	if want := "value cancelled confirmed value cancelled"; strings.Join(got, " ") != want {
		t.Errorf("outcomes %v, want %s", got, want)
	}
}

func TestFireAndForgetUIWithNothingOpen(t *testing.T) {
	// session_start handlers notify before any command: counted, not traced.
	h := newHarness(t)
	h.out(`{"type":"extension_ui_request","id":"n","method":"notify","message":"hello"}`)
	f := h.close(exit0)
	if len(f) != 0 {
		t.Errorf("spans %s", spantree.Shape(f))
	}
	if h.tr.Stats().UIEvents != 1 {
		t.Error("not counted")
	}
}

func TestErrorTextNeverEchoesContent(t *testing.T) {
	h := newHarness(t)
	h.in(`{"id":"p","type":"prompt","message":"my secret plan"}`)
	h.out(`{"id":"p","type":"response","command":"prompt","success":false,"error":"input handler rejected: my secret plan"}`)
	h.in(`{"id":"b","type":"bash","command":"cat /etc/secret-file"}`)
	h.out(`{"id":"b","type":"response","command":"bash","success":false,"error":"spawn failed for cat /etc/secret-file"}`)
	h.in(`{"hello "world"`)
	h.out(`{"type":"response","command":"parse","success":false,"error":"Failed to parse command: Unexpected token 'h', \"{\"hello \"world\"\" is not valid JSON"}`)
	// A provider error that reaches a response echoes the gateway's view
	// of the request, key included.
	h.in(`{"id":"c","type":"compact"}`)
	h.out(`{"id":"c","type":"response","command":"compact","success":false,"error":"401: {\"type\":\"authentication_error\",\"message\":\"invalid x-api-key sk-ant-api03-SECRETSECRETSECRET\"}"}`)
	f := h.close(exit0)
	want := []string{"rpc_error", "rpc_error", "parse_error", "401 authentication_error"}
	if len(f) != len(want) {
		t.Fatalf("spans %s", spantree.Shape(f))
	}
	for i, n := range f {
		if got := n.Status.Message; got != want[i] {
			t.Errorf("%s status %q, want %q", n.Name, got, want[i])
		}
	}
}

type upper struct{}

func (upper) Scrub(s string) string { return strings.ToUpper(s) }

func TestContentCaptureKeepsErrorTextsScrubbed(t *testing.T) {
	h := newHarness(t, rpc.WithContent(upper{}))
	h.in(`{"id":"p","type":"prompt","message":"plan"}`)
	h.out(`{"id":"p","type":"response","command":"prompt","success":false,"error":"rejected: plan"}`)
	h.in(`{"id":"x","type":"prompt","message":"/boom"}`)
	h.out(`{"type":"extension_error","extensionPath":"command:boom","event":"command","error":"boom failed"}`)
	h.out(`{"id":"x","type":"response","command":"prompt","success":true,"data":{"disposition":"handled"}}`)
	f := h.close(exit0)
	if got := f[0].Status.Message; got != "REJECTED: PLAN" {
		t.Errorf("status %q", got)
	}
	ev := f[1].EventsNamed("pi.extension_error")
	if len(ev) != 1 || ev[0].Str("pi.extension.error") != "BOOM FAILED" {
		t.Errorf("events %v", f[1].Events)
	}
}

func TestSessionIdentity(t *testing.T) {
	h := newHarness(t)
	h.in(`{"id":"s","type":"get_session_stats"}`)
	h.out(`{"id":"s","type":"response","command":"get_session_stats","success":true,"data":{"sessionId":"A"}}`)
	if got := h.m.SessionID(); got != "A" {
		t.Fatalf("session %q", got)
	}
	h.in(`{"id":"n","type":"new_session"}`)
	h.out(`{"id":"n","type":"response","command":"new_session","success":true,"data":{"cancelled":true}}`)
	if got := h.m.SessionID(); got != "A" {
		t.Fatalf("a cancelled switch changed the session to %q", got)
	}
	h.in(`{"id":"n2","type":"new_session"}`)
	h.out(`{"id":"n2","type":"response","command":"new_session","success":true,"data":{"cancelled":false}}`)
	if got := h.m.SessionID(); got != "" {
		t.Fatalf("stale session %q kept after new_session", got)
	}
	h.in(`{"id":"p","type":"prompt","message":"hi"}`)
	h.out(withID(started, "p"))
	h.out(`{"type":"agent_start"}`)
	h.in(`{"id":"g","type":"get_state"}`)
	h.out(`{"id":"g","type":"response","command":"get_state","success":true,"data":{"sessionId":"B"}}`)
	h.out(`{"type":"agent_end","messages":[],"willRetry":false}`)
	h.out(settled)
	f := h.close(exit0)
	root := spantree.Find(f, "invoke_agent pi")[0]
	root.WantAttrs(t, map[string]string{"gen_ai.conversation.id": "B"})
	spantree.ByAttr(t, f, "pi.rpc new_session", "pi.rpc.id", "n").WantAttrs(t, map[string]string{"pi.rpc.cancelled": "true"})
}

func TestTablesAreBounded(t *testing.T) {
	h := newHarness(t, rpc.WithMaxPending(2), rpc.WithMaxDialogs(1))
	for i := range 3 {
		h.in(fmt.Sprintf(`{"id":"g%d","type":"get_state"}`, i))
	}
	h.in(`{"id":"c","type":"get_commands"}`)
	h.out(`{"type":"extension_ui_request","id":"u1","method":"input","title":"?"}`)
	h.out(`{"type":"extension_ui_request","id":"u2","method":"input","title":"?"}`)
	st := h.tr.Stats()
	if st.Evicted != 2 || st.Pending != 2 || st.DialogsEvicted != 1 || st.OpenDialogs != 1 {
		t.Fatalf("stats %+v", st)
	}
	h.out(`{"id":"g0","type":"response","command":"get_state","success":true,"data":{}}`)
	if h.tr.Stats().UnmatchedResponses != 1 {
		t.Error("the response of an evicted command should count as unmatched")
	}
	f := h.close(exit0)
	spantree.ByAttr(t, f, "pi.rpc get_state", "pi.rpc.id", "g0").WantAttrs(t, map[string]string{"pi.end_reason": "evicted"})
	u1 := spantree.ByAttr(t, f, "pi.extension_ui input", "pi.ui.id", "u1")
	u1.WantAttrs(t, map[string]string{"pi.end_reason": "evicted", "pi.ui.outcome": "unanswered"})
}

func TestBashWithoutID(t *testing.T) {
	h := newHarness(t)
	h.in(`{"type":"bash","command":"ls"}`)
	h.out(`{"type":"bash_execution_update","delta":"a\n"}`)
	h.out(`{"type":"bash_execution_update","delta":"bc\n"}`)
	h.out(`{"type":"response","command":"bash","success":true,"data":{"output":"a\nbc\n","exitCode":2,"cancelled":false,"truncated":false}}`)
	f := h.close(exit0)
	f[0].WantAttrs(t, map[string]string{
		"pi.bash.output_chunks": "2", "pi.bash.output_bytes": "5", "pi.bash.exit_code": "2", "pi.bash.truncated": "false",
	})
}

func TestOutOfOrderTimesAreClamped(t *testing.T) {
	h := newHarness(t)
	t0 := h.at
	h.tr.FromController([]byte(`{"id":"g","type":"get_state"}`), t0.Add(time.Second))
	h.tr.FromPi([]byte(`{"id":"g","type":"response","command":"get_state","success":true}`), t0)
	h.tr.Close(exit0, t0)
	s := h.rec.Spans.Ended()[0]
	if s.EndTime().Before(s.StartTime()) {
		t.Errorf("span ends %v before it starts %v", s.EndTime(), s.StartTime())
	}
}

func TestMalformedPiOutputIsCountedNotTraced(t *testing.T) {
	h := newHarness(t)
	h.out(`not json`)
	h.out(`[]`)
	h.out(`{"no":"type"}`)
	f := h.close(exit0)
	if st := h.tr.Stats(); st.PiMalformed != 3 || st.PiRecords != 0 || len(f) != 0 {
		t.Errorf("stats %+v, spans %s", st, spantree.Shape(f))
	}
}

func TestConcurrentFeeding(t *testing.T) {
	// The proxy feeds the tracker from two goroutines; run with -race.
	h := newHarness(t)
	const n = 200
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range n {
			h.tr.FromController([]byte(fmt.Sprintf(`{"id":"g%d","type":"get_state"}`, i)), time.Now())
		}
	}()
	go func() {
		defer wg.Done()
		for range n {
			h.tr.FromPi([]byte(`{"type":"extension_ui_request","id":"n","method":"notify"}`), time.Now())
			_ = h.tr.Stats()
		}
	}()
	wg.Wait()
	h.tr.Close(exit0, time.Now())
	if st := h.tr.Stats(); st.Commands != n || st.UIEvents != n {
		t.Errorf("stats %+v", st)
	}
}

// session feeds n prompt cycles with commands and a dialog each.
func session(tr *rpc.Tracker, n int, at time.Time) time.Time {
	step := func() time.Time { at = at.Add(time.Millisecond); return at }
	for i := range n {
		id := fmt.Sprintf("p%d", i)
		tr.FromController([]byte(`{"id":"`+id+`","type":"prompt","message":"hello"}`), step())
		tr.FromPi([]byte(`{"id":"`+id+`","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}`), step())
		tr.FromPi([]byte(`{"type":"agent_start"}`), step())
		tr.FromPi([]byte(`{"type":"turn_start"}`), step())
		tr.FromPi([]byte(`{"type":"extension_ui_request","id":"u`+id+`","method":"confirm","title":"?"}`), step())
		tr.FromController([]byte(`{"type":"extension_ui_response","id":"u`+id+`","confirmed":true}`), step())
		tr.FromPi([]byte(`{"type":"turn_end","message":{"role":"assistant","content":[],"stopReason":"stop"}}`), step())
		tr.FromPi([]byte(`{"type":"agent_end","messages":[],"willRetry":false}`), step())
		tr.FromPi([]byte(settled), step())
		tr.FromController([]byte(`{"id":"g`+id+`","type":"get_state"}`), step())
		tr.FromPi([]byte(`{"id":"g`+id+`","type":"response","command":"get_state","success":true,"data":{"sessionId":"S"}}`), step())
	}
	return at
}

func TestLongSessionsKeepNoState(t *testing.T) {
	// No exporter: spans are dropped as they end, so the heap measures the
	// tracker and the mapper alone.
	tp := sdktrace.NewTracerProvider()
	tr := rpc.New(agentmap.New(tp), tp)
	at := session(tr, 500, time.Now())
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	session(tr, 20000, at)
	after := heap()
	st := tr.Stats()
	if st.Pending != 0 || st.OpenDialogs != 0 || st.Held != 0 || st.Runs != 20500 || st.UnmatchedResponses != 0 {
		t.Fatalf("stats %+v", st)
	}
	// 20000 more prompts must not leave per-prompt state behind; allow
	// slack for the runtime, far below 20000 × any per-prompt record.
	if after > before+512<<10 {
		t.Errorf("heap grew from %d to %d bytes over 20000 prompts", before, after)
	}
}

func BenchmarkPromptCycle(b *testing.B) {
	tp := sdktrace.NewTracerProvider()
	tr := rpc.New(agentmap.New(tp), tp)
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		at = session(tr, 1, at)
	}
}

func TestRecordsAfterCloseAreNotTraced(t *testing.T) {
	h := newHarness(t)
	f := h.close(exit0)
	h.in(`{"id":"late","type":"get_state"}`)
	h.out(`{"id":"late","type":"response","command":"get_state","success":true}`)
	h.tr.Close(exit0, h.at)
	if len(f) != 0 || len(h.rec.Spans.Started()) != 0 {
		t.Errorf("spans after close: %d", len(h.rec.Spans.Started()))
	}
	if st := h.tr.Stats(); st.ControllerRecords != 1 || st.Commands != 0 {
		t.Errorf("stats %+v", st)
	}
}

// WithBashAnswered is told each response to a controller's bash command
// as the tracker reads it, by the command's id; other responses, and ids
// that are no strings, tell it nothing.
func TestBashAnswered(t *testing.T) {
	var got []string
	h := newHarness(t, rpc.WithBashAnswered(func(id string) { got = append(got, id) }))
	h.in(`{"id":"b1","type":"bash","command":"ls"}`)
	h.out(`{"id":"b1","type":"response","command":"bash","success":true,"data":{"output":"bash\n","exitCode":0}}`)
	h.out(`{"type":"response","command":"bash","success":true,"data":{"exitCode":0}}`)
	h.out(`{"id":7,"type":"response","command":"bash","success":true}`)
	h.out(`{"id":"p1","type":"response","command":"prompt","success":true,"data":{"output":"bash"}}`)
	h.out(`{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","result":{"command":"bash"}}`)
	if want := []string{"b1", ""}; strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
		t.Errorf("answered %q, want %q", got, want)
	}
}
