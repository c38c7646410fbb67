package rpc_test

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// TestConversationIDOnEveryRPCSpan: commands and dialogs inside a run
// carry the session id too, and those open when the id is learnt (the
// get_state that learns it among them) get it.
func TestConversationIDOnEveryRPCSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := rpc.New(agentmap.New(tp), tp)
	at := time.Unix(1_800_000_000, 0)
	step := func() time.Time { at = at.Add(time.Millisecond); return at }
	ctl := func(s string) { tr.FromController([]byte(s), step()) }
	pi := func(s string) { tr.FromPi([]byte(s), step()) }

	ctl(`{"id":"b1","type":"bash","command":"sleep 1"}`) // open while the id is learnt
	ctl(`{"id":"s1","type":"get_state"}`)
	pi(`{"type":"response","id":"s1","command":"get_state","success":true,"data":{"sessionId":"sess-1"}}`)
	pi(`{"type":"response","id":"b1","command":"bash","success":true,"data":{"output":"","exitCode":0}}`)
	ctl(`{"id":"p1","type":"prompt","message":"hi"}`)
	pi(`{"type":"response","id":"p1","command":"prompt","success":true,"data":{"disposition":"started"}}`)
	pi(`{"type":"agent_start"}`)
	ctl(`{"id":"g2","type":"get_state"}`)
	pi(`{"type":"extension_ui_request","id":"u1","method":"confirm","title":"ok?"}`)
	ctl(`{"type":"extension_ui_response","id":"u1","confirmed":true}`)
	pi(`{"type":"response","id":"g2","command":"get_state","success":true,"data":{"sessionId":"sess-1"}}`)
	pi(`{"type":"agent_end","messages":[],"willRetry":false}`)
	pi(`{"type":"agent_settled"}`)
	tr.Close(agentmap.Ending{Reason: vocab.EndExit}, step())

	seen := map[string]bool{}
	for _, s := range rec.Ended() {
		seen[s.Name()] = true
		var conv string
		for _, kv := range s.Attributes() {
			if kv.Key == semconv.GenAIConversationIDKey {
				conv = kv.Value.AsString()
			}
		}
		if conv != "sess-1" {
			t.Errorf("%s: gen_ai.conversation.id %q, want sess-1", s.Name(), conv)
		}
	}
	for _, want := range []string{"pi.rpc bash", "pi.rpc prompt", "pi.rpc get_state", "pi.extension_ui confirm", vocab.SpanRoot} {
		if !seen[want] {
			t.Errorf("no %s span", want)
		}
	}
}
