package telemetry_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/telemetry/spanlogs"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
)

// TestAttributeValueLengthLimit: OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT cuts
// every string attribute, of spans and of span events, in characters, as
// the specification says; unset, nothing is cut.
func TestAttributeValueLengthLimit(t *testing.T) {
	long := strings.Repeat("é", 100)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int // characters kept
	}{
		{"limit", map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "8"}, 8},
		{"span limit wins", map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "8", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "5"}, 5},
		{"no limit", nil, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := t.TempDir() + "/traces.jsonl"
			env := map[string]string{"PI_OTEL_TRACES_FILE": path}
			for k, v := range tc.env {
				env[k] = v
			}
			tel, _ := setup(t, loadConfig(t, env))
			ctx, parent := tel.TracerProvider().Tracer("t").Start(context.Background(), "parent",
				trace.WithAttributes(attribute.String("span.attr", long)))
			_, child := tel.TracerProvider().Tracer("t").Start(ctx, "child")
			// The context's span is the one events are added to, as RPC tracing does.
			trace.SpanFromContext(ctx).AddEvent("ev", trace.WithAttributes(
				attribute.String("event.attr", long), attribute.StringSlice("event.list", []string{long, "ok"})))
			child.End()
			parent.End()
			req := shutdownAndRead(t, tel, path, otlpjson.UnmarshalTraces)
			want := strings.Repeat("é", tc.want)
			checked := 0
			for _, s := range req.ResourceSpans[0].ScopeSpans[0].Spans {
				if s.Name == "child" && string(s.ParentSpanId) == "" {
					t.Error("the child lost its parent")
				}
				if s.Name != "parent" {
					continue
				}
				for _, kv := range s.Attributes {
					checked++
					if got := kv.Value.GetStringValue(); got != want {
						t.Errorf("span attribute %s has %d characters, want %d", kv.Key, len([]rune(got)), tc.want)
					}
				}
				for _, kv := range s.Events[0].Attributes {
					checked++
					got := kv.Value.GetStringValue()
					if l := kv.Value.GetArrayValue(); l != nil {
						got = l.Values[0].GetStringValue()
					}
					if got != want {
						t.Errorf("event attribute %s has %d characters, want %d", kv.Key, len([]rune(got)), tc.want)
					}
				}
			}
			if checked != 3 {
				t.Fatalf("checked %d attributes, want 3", checked)
			}
		})
	}
}

// TestLogRecordLimits: log records follow the attribute length limit of
// the configuration, like spans, and not a stray SDK variable.
func TestLogRecordLimits(t *testing.T) {
	t.Setenv("OTEL_LOGRECORD_ATTRIBUTE_VALUE_LENGTH_LIMIT", "3") // not pi-otel's setting: ignored
	long := strings.Repeat("é", 100)
	for _, tc := range []struct {
		env  map[string]string
		want int
	}{
		{nil, 100},
		{map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "8"}, 8},
	} {
		path := t.TempDir() + "/logs.jsonl"
		env := map[string]string{"OTEL_TRACES_EXPORTER": "none", "PI_OTEL_LOGS_FILE": path}
		for k, v := range tc.env {
			env[k] = v
		}
		tel, _ := setup(t, loadConfig(t, env), telemetry.WithLogProcessor(func(lp log.LoggerProvider) (sdktrace.SpanProcessor, error) {
			return spanlogs.New(lp, spanlogs.Config{}), nil
		}))
		_, root := tel.TracerProvider().Tracer("t").Start(context.Background(), "invoke_agent pi",
			trace.WithAttributes(attribute.String("long", long)))
		root.End()
		req := shutdownAndRead(t, tel, path, otlpjson.UnmarshalLogs)
		attrs := req.ResourceLogs[0].ScopeLogs[0].LogRecords[0].Attributes
		if len(attrs) != 1 || len([]rune(attrs[0].Value.GetStringValue())) != tc.want {
			t.Errorf("%v: record attributes %v, want %d characters", tc.env, attrs, tc.want)
		}
	}
}

// shutdownAndRead shuts tel down and decodes the one line it wrote to the
// file at path.
func shutdownAndRead[R any](t *testing.T, tel *telemetry.Pipeline, path string, unmarshal func([]byte) (R, error)) R {
	t.Helper()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	req, err := unmarshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
