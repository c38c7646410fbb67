package otlpjson_test

import (
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
)

func TestUnmarshalAcceptsBase64IDs(t *testing.T) {
	// Plain protobuf JSON (base64 ids) is read too, so either form loads.
	line := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"S/kvNXezTaajzpKdDg5HNg==","spanId":"APBnqgupArc=","name":"x"}]}]}]}`
	req, err := otlpjson.UnmarshalTraces([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	s := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	if trace.TraceID(s.TraceId).String() != "4bf92f3577b34da6a3ce929d0e0e4736" || trace.SpanID(s.SpanId).String() != "00f067aa0ba902b7" {
		t.Errorf("ids = %x %x", s.TraceId, s.SpanId)
	}
	if _, err := otlpjson.UnmarshalTraces([]byte(`{"resourceSpans":`)); err == nil {
		t.Error("truncated line decoded without error")
	}
}
