package agentmap_test

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// oneRun feeds a run with one tool call, keyed by key ("" for a live run).
func oneRun(m *agentmap.Mapper, key string, uncounted bool) {
	at := time.Unix(1_800_000_000, 0)
	for _, ev := range []event.Event{
		{Type: event.TypeAgentStart},
		{Type: event.TypeTurnStart},
		{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant", Model: "m"}},
		{Type: event.TypeMessageEnd, Message: &event.Message{Role: "assistant", Model: "m", StopReason: "toolUse"}},
		{Type: event.TypeToolExecutionStart, ToolCallID: "c1", ToolName: "bash"},
		{Type: event.TypeToolExecutionEnd, ToolCallID: "c1", ToolName: "bash"},
		{Type: event.TypeTurnEnd},
		{Type: event.TypeAgentEnd},
		{Type: event.TypeAgentSettled},
	} {
		at = at.Add(time.Millisecond)
		m.Handle(agentmap.Input{Event: &ev, At: at, Key: key, Uncounted: uncounted})
	}
}

// The root a live run opens has the ids ReserveRoot gave out before it
// (what Pi gets as TRACEPARENT), under a caller's trace or none; the next
// live root gets others.
func TestReserveRootIsTheNextRoot(t *testing.T) {
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled, Remote: true})
	for _, parent := range []trace.SpanContext{{}, caller} {
		rec := tracetest.NewSpanRecorder()
		opts := []agentmap.Option{}
		if parent.IsValid() {
			opts = append(opts, agentmap.WithParent(trace.ContextWithRemoteSpanContext(t.Context(), parent)))
		}
		m := agentmap.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
			sdktrace.WithIDGenerator(spanid.NewGenerator(nil))), opts...)
		want := m.ReserveRoot(parent)
		oneRun(m, "", false)
		oneRun(m, "", false)
		var roots []trace.SpanContext
		for _, s := range rec.Ended() {
			if s.Name() == vocab.SpanRoot {
				roots = append(roots, s.SpanContext())
			}
		}
		if len(roots) != 2 {
			t.Fatalf("%d roots", len(roots))
		}
		if roots[0].TraceID() != want.TraceID() || roots[0].SpanID() != want.SpanID() {
			t.Errorf("parent %v: root %v, reserved %v", parent, roots[0], want)
		}
		if parent.IsValid() && want.TraceID() != parent.TraceID() {
			t.Errorf("reserved %v outside the caller's trace %v", want, parent)
		}
		if roots[1].SpanID() == want.SpanID() {
			t.Error("the second root took the first one's reservation")
		}
	}
}

// Every span of a run traced again says so, and no span of a first
// tracing does: the span metrics and the report leave the former out.
func TestRetracedRunSaysSoOnEverySpan(t *testing.T) {
	for _, uncounted := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		m := agentmap.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
			sdktrace.WithIDGenerator(spanid.NewGenerator(nil))))
		oneRun(m, "s1/e1", uncounted)
		if len(rec.Ended()) < 5 {
			t.Fatalf("%d spans", len(rec.Ended()))
		}
		for _, s := range rec.Ended() {
			marked := false
			for _, kv := range s.Attributes() {
				marked = marked || kv.Key == vocab.RetracedKey && kv.Value.AsBool()
			}
			if marked != uncounted {
				t.Errorf("uncounted %v: span %s has pi.retraced %v", uncounted, s.Name(), marked)
			}
		}
	}
}
