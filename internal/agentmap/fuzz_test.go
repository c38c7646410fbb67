package agentmap_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// vocabulary is every lifecycle step, with small id and flag spaces so that
// random sequences hit duplicates, ends without starts and the like.
func randomEvent(b byte, arg byte) *event.Event {
	yes, no := true, false
	flag := &no
	if arg&1 == 1 {
		flag = &yes
	}
	id := string(rune('a' + arg%3))
	dur := float64(arg)
	switch b % 23 {
	case 0:
		return &event.Event{Type: event.TypeAgentStart}
	case 1:
		return &event.Event{Type: event.TypeAgentEnd, WillRetry: flag}
	case 2:
		return &event.Event{Type: event.TypeAgentEnd} // pre-1.x
	case 3:
		return &event.Event{Type: event.TypeAgentSettled, Aborted: flag}
	case 4:
		return &event.Event{Type: event.TypeTurnStart}
	case 5:
		return &event.Event{Type: event.TypeTurnEnd}
	case 6:
		return &event.Event{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant", Model: "m"}}
	case 7:
		return &event.Event{Type: event.TypeMessageUpdate, AssistantMessageEvent: &event.AssistantMessageEvent{Type: "text_delta"}}
	case 8:
		stop := "stop"
		if arg%4 == 0 {
			stop = "error"
		}
		return &event.Event{Type: event.TypeMessageEnd, Message: &event.Message{Role: "assistant", Model: "m", StopReason: stop, Usage: &event.Usage{Input: 1}}}
	case 9:
		return &event.Event{Type: event.TypeMessageEnd, Message: &event.Message{Role: "user"}}
	case 10:
		return &event.Event{Type: event.TypeToolExecutionStart, ToolCallID: id, ToolName: "bash"}
	case 11:
		return &event.Event{Type: event.TypeToolExecutionUpdate, ToolCallID: id}
	case 12:
		return &event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: id, IsError: arg&2 == 2, DurationMs: &dur}
	case 13:
		return &event.Event{Type: event.TypeCompactionStart, Reason: "threshold"}
	case 14:
		return &event.Event{Type: event.TypeCompactionEnd, WillRetry: flag, Aborted: &no}
	case 15:
		return &event.Event{Type: event.TypeAutoRetryStart, Attempt: int(arg % 4)}
	case 16:
		return &event.Event{Type: event.TypeAutoRetryEnd, Success: flag}
	case 17:
		return &event.Event{Type: event.TypeSummarizationRetryAttempt}
	case 18:
		return &event.Event{Type: event.TypeQueueUpdate}
	case 19:
		return &event.Event{Type: event.TypeExtensionError}
	case 20:
		return &event.Event{Type: event.TypeMessageUpdate, RawMessage: []byte(`{}`)} // pre-1.x marker
	case 21:
		// A subagent's result: a child whose messages are timed around
		// the fuzz clock, in and out of order, one level deeper too.
		t0, t1 := int(arg)*3, int(arg%7)*11
		res := fmt.Sprintf(`{"details":{"results":[{"agent":"a","exitCode":%d,"messages":[`+
			`{"role":"assistant","timestamp":%d,"durationMs":%d,"stopReason":"toolUse","usage":{"cost":{"total":1}}},`+
			`{"role":"toolResult","toolName":"subagent","timestamp":%d,"durationMs":%d,"details":{"results":[{"messages":[{"role":"assistant","timestamp":%d}]}]}}]}]},`+
			`"nestedCalls":{"calls":[{"id":"n","name":"read","status":"error","durationMs":%d}]}}`,
			arg%3, t0, arg%5, t1, arg%9, t0+t1, arg)
		return &event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: id, ToolName: "subagent", DurationMs: &dur, Result: []byte(res)}
	default:
		return &event.Event{Type: "from_the_future"}
	}
}

// checkStream feeds a sequence and checks the invariants every stream must
// keep, however disordered: every span ends, children stay in their
// parent's trace, and each trace has one root.
func checkStream(t *testing.T, seq []byte, opts ...agentmap.Option) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	m := agentmap.New(tp, opts...)
	at := time.Unix(0, 0)
	for i := 0; i+1 < len(seq); i += 2 {
		at = at.Add(time.Millisecond)
		m.Handle(agentmap.Input{Event: randomEvent(seq[i], seq[i+1]), At: at})
	}
	m.Close(agentmap.Ending{Reason: vocab.EndEOF}, at.Add(time.Millisecond))
	if len(rec.Started()) != len(rec.Ended()) {
		t.Fatalf("%d spans started, %d ended", len(rec.Started()), len(rec.Ended()))
	}
	rootsPerTrace := map[string]int{}
	ids := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		ids[s.SpanContext().SpanID().String()] = s
	}
	for _, s := range rec.Ended() {
		p, ok := ids[s.Parent().SpanID().String()]
		if !s.Parent().IsValid() || !ok {
			rootsPerTrace[s.SpanContext().TraceID().String()]++
			continue
		}
		if p.SpanContext().TraceID() != s.SpanContext().TraceID() {
			t.Fatalf("%s escaped its parent's trace", s.Name())
		}
		if s.StartTime().Before(p.StartTime()) {
			t.Fatalf("%s starts before its parent %s", s.Name(), p.Name())
		}
	}
	for tid, n := range rootsPerTrace {
		if n != 1 {
			t.Fatalf("trace %s has %d roots", tid, n)
		}
	}
	checkRootsSampled(t, seq, opts...)
}

func TestRandomInterleavings(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		seq := make([]byte, rng.IntN(200))
		for j := range seq {
			seq[j] = byte(rng.UintN(256))
		}
		checkStream(t, seq)
	}
}

func FuzzMapper(f *testing.F) {
	f.Add([]byte{0, 0, 4, 0, 6, 0, 8, 1, 5, 0, 1, 0, 3, 0})
	f.Add([]byte{0, 0, 15, 0, 1, 1, 0, 0, 16, 1, 3, 0})
	f.Add([]byte{0, 0, 4, 0, 10, 1, 21, 1, 10, 2, 21, 200, 5, 0, 3, 0})
	f.Fuzz(func(t *testing.T, seq []byte) { checkStream(t, seq) })
}

func TestAnomaliesAreCounted(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	m := agentmap.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	at := time.Unix(0, 0)
	d := 5.0
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeAgentSettled}, At: at})
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeAgentStart}, At: at})
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeAgentStart}, At: at})
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: "x", ToolName: "bash", DurationMs: &d}, At: at.Add(10 * time.Millisecond)})
	m.Handle(agentmap.Input{Event: &event.Event{Type: "hologram"}, At: at})
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeAgentSettled}, At: at})
	st := m.Stats()
	for _, k := range []string{"agent_settled with nothing open", "agent_start inside an agent run", "tool_execution_end without start"} {
		if st.Anomalies[k] != 1 {
			t.Errorf("anomaly %q counted %d times (all: %v)", k, st.Anomalies[k], st.Anomalies)
		}
	}
	if st.Unknown != 1 {
		t.Errorf("unknown %d", st.Unknown)
	}
	var tool sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "execute_tool bash" {
			tool = s
		}
	}
	if tool == nil || tool.EndTime().Sub(tool.StartTime()) != 5*time.Millisecond {
		t.Fatalf("orphan tool end not placed by its duration: %v", tool)
	}
}
