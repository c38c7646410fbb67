package mapper_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// A run cut mid-tool, through the public API only: records in, Close with
// a signal, spans out under the caller's parent.
func TestRecordAndClose(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled,
	})
	m := mapper.New(tp, mapper.WithParent(trace.ContextWithSpanContext(context.Background(), parent)),
		mapper.WithInexactTimes())

	at := time.Unix(1_700_000_000, 0)
	for _, r := range []string{
		`{"type":"session","version":3,"id":"sess-1","timestamp":"2026-01-01T00:00:00Z","cwd":"/home/u/proj"}`,
		// Two records written with no LF between them: read as both.
		`{"type":"agent_start"}{"type":"turn_start"}`,
		`{"type":"tool_execution_start","toolCallId":"t1","toolName":"bash","args":{}}`,
	} {
		at = at.Add(time.Millisecond)
		if err := m.Record([]byte(r), at); err != nil {
			t.Fatalf("%s: %v", r, err)
		}
	}
	if err := m.Record([]byte(`{not json`), at); err == nil {
		t.Error("a line that is not JSON gave no error")
	}
	if !m.Active() || m.SessionID() != "sess-1" {
		t.Fatalf("active %v, session %q", m.Active(), m.SessionID())
	}
	m.Close(mapper.Ending{Reason: vocab.EndSignal, ExitCode: 143, Signal: "SIGTERM"}, at.Add(time.Second))
	if m.Active() {
		t.Error("a run is still open after Close")
	}

	spans := rec.Ended()
	var root sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == vocab.SpanRoot {
			root = s
		}
		if sc := s.InstrumentationScope(); sc.Name != mapper.ScopeName || sc.SchemaURL != vocab.SchemaURL {
			t.Errorf("%s: scope %q, schema %q", s.Name(), sc.Name, sc.SchemaURL)
		}
	}
	if len(spans) != 4 || root == nil {
		t.Fatalf("%d spans, root %v; want the root, pi.agent_run, pi.turn and the tool", len(spans), root != nil)
	}
	if root.Parent().SpanID() != parent.SpanID() {
		t.Errorf("root's parent %v, want %v", root.Parent().SpanID(), parent.SpanID())
	}
	want := map[string]string{
		string(vocab.EndReasonKey): string(vocab.EndSignal),
		string(vocab.OutcomeKey):   string(vocab.OutcomeUnsettled),
		string(vocab.SignalKey):    "SIGTERM",
		string(vocab.ExitCodeKey):  "143",
		string(vocab.ProjectKey):   "proj",
	}
	got := map[string]string{}
	for _, kv := range root.Attributes() {
		got[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("root %s=%q, want %q", k, got[k], v)
		}
	}
	st := m.Stats()
	if st.Events != 4 || st.Roots != 1 {
		t.Errorf("stats %+v", st)
	}
}
