package agentmap_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
)

// ToolContext names the execute_tool span of a call before it starts, and
// the span then gets it: live (random root, derived children) and keyed
// (a session file's run), for a call id given once and given again.
func TestToolContextIsTheSpanItWillBe(t *testing.T) {
	for _, key := range []string{"", "s1/e1"} {
		rec := tracetest.NewSpanRecorder()
		m := agentmap.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
			sdktrace.WithIDGenerator(spanid.NewGenerator(nil))))
		at := time.Unix(1_800_000_000, 0)
		handle := func(ev event.Event) {
			at = at.Add(time.Millisecond)
			m.Handle(agentmap.Input{Event: &ev, At: at, Key: key})
		}
		if _, ok := m.ToolContext("c1"); ok {
			t.Fatalf("%q: a tool context with no run open", key)
		}
		handle(event.Event{Type: event.TypeAgentStart})
		var want []trace.SpanContext
		for range 2 { // the same call id in two turns: two spans
			handle(event.Event{Type: event.TypeTurnStart})
			handle(event.Event{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant", Model: "m"}})
			handle(event.Event{Type: event.TypeMessageEnd, Message: &event.Message{Role: "assistant", Model: "m", StopReason: "toolUse"}})
			sc, ok := m.ToolContext("c1")
			if !ok || !sc.IsValid() {
				t.Fatalf("%q: no tool context before the tool starts", key)
			}
			want = append(want, sc)
			handle(event.Event{Type: event.TypeToolExecutionStart, ToolCallID: "c1", ToolName: "bash"})
			if open, _ := m.ToolContext("c1"); !open.Equal(sc) {
				t.Fatalf("%q: open tool %v, named before as %v", key, open, sc)
			}
			handle(event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: "c1", ToolName: "bash"})
			handle(event.Event{Type: event.TypeTurnEnd})
		}
		handle(event.Event{Type: event.TypeAgentEnd})
		handle(event.Event{Type: event.TypeAgentSettled})
		var got []trace.SpanContext
		for _, s := range rec.Ended() {
			if s.Name() == "execute_tool bash" {
				got = append(got, s.SpanContext())
			}
		}
		if len(got) != 2 || !got[0].Equal(want[0]) || !got[1].Equal(want[1]) || want[0].Equal(want[1]) {
			t.Errorf("%q: tool spans %v, named before they started as %v", key, got, want)
		}
		if key != "" {
			if root := rec.Ended()[len(rec.Ended())-1]; root.SpanContext().TraceID() != spanid.TraceID(key) || root.SpanContext().SpanID() != spanid.SpanID(key, spanid.Path{}) {
				t.Errorf("keyed root %v", root.SpanContext())
			}
		}
	}
}

// A TracerProvider that does not derive ids from keys gives no tool
// context: it could not be kept.
func TestToolContextNeedsDerivedIDs(t *testing.T) {
	m := agentmap.New(sdktrace.NewTracerProvider())
	at := time.Unix(1_800_000_000, 0)
	for _, ev := range []event.Event{{Type: event.TypeAgentStart}, {Type: event.TypeTurnStart}} {
		m.Handle(agentmap.Input{Event: &ev, At: at})
	}
	if sc, ok := m.ToolContext("c1"); ok {
		t.Errorf("tool context %v from random ids", sc)
	}
}

// Under a caller that does not sample, no span is recorded, yet a tool's
// context is still named, in the caller's trace and unsampled: the
// caller's decision carries down to the tool's processes.
func TestToolContextUnderUnsampledCaller(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithIDGenerator(spanid.NewGenerator(nil)))
	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x0a, 0xf7, 1}, SpanID: trace.SpanID{0xb7, 2}, Remote: true,
	})
	m := agentmap.New(tp, agentmap.WithParent(trace.ContextWithRemoteSpanContext(context.Background(), caller)))
	at := time.Unix(1_800_000_000, 0)
	for _, ev := range []event.Event{
		{Type: event.TypeAgentStart}, {Type: event.TypeTurnStart},
		{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant", Model: "m"}},
		{Type: event.TypeMessageEnd, Message: &event.Message{Role: "assistant", Model: "m", StopReason: "toolUse"}},
	} {
		at = at.Add(time.Millisecond)
		m.Handle(agentmap.Input{Event: &ev, At: at})
	}
	sc, ok := m.ToolContext("c1")
	if !ok || !sc.IsValid() {
		t.Fatal("no tool context under an unsampled caller")
	}
	if sc.TraceID() != caller.TraceID() || sc.IsSampled() || sc.SpanID() == caller.SpanID() {
		t.Errorf("tool context %v under caller %v: want the caller's trace, unsampled, a span of its own", sc, caller)
	}
	if n := len(rec.Started()); n != 0 {
		t.Errorf("%d spans recorded under an unsampled caller", n)
	}
}

// WithBashCalls hands on the bash calls an event carries, once handled:
// at the message's end with the span the call will have, at its
// tool_execution_start with the open span; no span records the command.
func TestWithBashCalls(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	type got struct {
		call event.BashCall
		sc   trace.SpanContext
	}
	var calls []got
	m := agentmap.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(spanid.NewGenerator(nil))),
		agentmap.WithBashCalls(func(c event.BashCall, sc trace.SpanContext) { calls = append(calls, got{c, sc}) }))
	if !m.ReadsBashCalls() {
		t.Fatal("the mapper does not ask its feeders for bash calls")
	}
	if agentmap.New(sdktrace.NewTracerProvider()).ReadsBashCalls() {
		t.Fatal("a mapper without WithBashCalls asks for bash calls")
	}
	at := time.Unix(1_800_000_000, 0)
	handle := func(ev event.Event) {
		at = at.Add(time.Millisecond)
		m.Handle(agentmap.Input{Event: &ev, At: at})
	}
	const cmd = "make secret-target"
	c1 := event.BashCall{ID: "c1", Command: cmd}
	handle(event.Event{Type: event.TypeAgentStart})
	handle(event.Event{Type: event.TypeTurnStart})
	handle(event.Event{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant"}})
	handle(event.Event{Type: event.TypeMessageEnd, Message: &event.Message{Role: "assistant", StopReason: "toolUse"}, BashCalls: []event.BashCall{c1}})
	if len(calls) != 1 || calls[0].call != c1 || !calls[0].sc.IsValid() {
		t.Fatalf("at the message's end: %+v", calls)
	}
	handle(event.Event{Type: event.TypeToolExecutionStart, ToolCallID: "c1", ToolName: "bash", BashCalls: []event.BashCall{c1}})
	handle(event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: "c1", ToolName: "bash"})
	handle(event.Event{Type: event.TypeTurnEnd})
	handle(event.Event{Type: event.TypeAgentEnd})
	handle(event.Event{Type: event.TypeAgentSettled})
	if len(calls) != 2 || calls[1].call != c1 {
		t.Fatalf("at the tool's start: %+v", calls)
	}
	var tool trace.SpanContext
	for _, s := range rec.Ended() {
		if s.Name() == "execute_tool bash" {
			tool = s.SpanContext()
		}
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), cmd) {
				t.Errorf("span %s holds the command in %s", s.Name(), kv.Key)
			}
		}
	}
	if !calls[0].sc.Equal(tool) || !calls[1].sc.Equal(tool) {
		t.Errorf("calls named %v and %v, the span is %v", calls[0].sc, calls[1].sc, tool)
	}
}
