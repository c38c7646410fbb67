package otlpfile_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
	"github.com/pi-otel/pi-otel/internal/testutil/logtest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
)

// TestLogExporterWritesOTLPJSONLines: one line per export, ids in hex as
// OTLP/JSON has them, every field back after a round trip.
func TestLogExporterWritesOTLPJSONLines(t *testing.T) {
	c := &logtest.Memory{}
	lp := logtest.NewProvider(c,
		sdklog.WithResource(resource.NewSchemaless(attribute.String("service.name", "pi"))))
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	at := time.Unix(1_700_000_000, 5)
	var r log.Record
	r.SetEventName("pi.tool.result")
	r.SetTimestamp(at)
	r.SetObservedTimestamp(at.Add(time.Second))
	r.SetSeverity(log.SeverityWarn)
	r.SetSeverityText("WARN")
	r.SetBody(attribute.StringValue("pi.tool.result"))
	r.AddAttributes(attribute.String("gen_ai.tool.name", "bash"), attribute.Int("pi.tool.duration_ms", 8),
		attribute.StringSlice("list", []string{"a", "b"}))
	lp.Logger("scope").Emit(trace.ContextWithSpanContext(context.Background(), sc), r)

	var buf bytes.Buffer
	exp := otlpfile.NewLogExporter(&buf)
	if err := exp.Export(context.Background(), c.Records()); err != nil {
		t.Fatal(err)
	}
	if err := exp.Export(context.Background(), nil); err != nil || strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("want one line, got %q (%v)", buf.String(), err)
	}
	line := buf.String()
	for _, want := range []string{`"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"`, `"spanId":"00f067aa0ba902b7"`, `"eventName":"pi.tool.result"`, `"severityNumber":13`} {
		if !strings.Contains(line, want) {
			t.Errorf("no %s in %s", want, line)
		}
	}
	req, err := otlpjson.UnmarshalLogs([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	rl := req.ResourceLogs[0]
	got := rl.ScopeLogs[0].LogRecords[0]
	if rl.Resource.Attributes[0].Value.GetStringValue() != "pi" || rl.ScopeLogs[0].Scope.Name != "scope" {
		t.Errorf("resource %v scope %v", rl.Resource, rl.ScopeLogs[0].Scope)
	}
	if got.TimeUnixNano != uint64(at.UnixNano()) || got.ObservedTimeUnixNano != uint64(at.Add(time.Second).UnixNano()) ||
		got.SeverityText != "WARN" || got.Body.GetStringValue() != "pi.tool.result" || got.Flags != 1 ||
		len(got.Attributes) != 3 || got.Attributes[1].Value.GetIntValue() != 8 ||
		len(got.Attributes[2].Value.GetArrayValue().GetValues()) != 2 {
		t.Errorf("record %v", got)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := exp.Export(context.Background(), c.Records()); err != nil || strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("wrote after shutdown: %v", err)
	}
}
