package telemetry_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
)

// TestSpanAttributes: the process's facts are on every span, asked for
// once; as names they pass the redaction (a --redact pattern here), but
// the commit, an id, stays whole.
func TestSpanAttributes(t *testing.T) {
	path := t.TempDir() + "/t.jsonl"
	cfg := loadConfig(t, map[string]string{"PI_OTEL_TRACES_FILE": path})
	cfg.Redact = []string{"acme-secret"}
	calls := 0
	rev := "0123456789abcdef0123456789abcdef01234567"
	tel, _ := setup(t, cfg, telemetry.WithSpanAttributes(func() []attribute.KeyValue {
		calls++
		return []attribute.KeyValue{
			attribute.String("vcs.repository.url.full", "https://git.example.com/acme-secret/widget"),
			attribute.String("vcs.ref.head.revision", rev),
		}
	}))
	makeTrace(tel.TracerProvider())
	req := shutdownAndRead(t, tel, path, otlpjson.UnmarshalTraces)
	spans := req.ResourceSpans[0].ScopeSpans[0].Spans
	if len(spans) != 3 || calls != 1 {
		t.Fatalf("%d spans, attributes asked for %d times", len(spans), calls)
	}
	for _, s := range spans {
		got := map[string]string{}
		for _, kv := range s.Attributes {
			got[kv.Key] = kv.Value.GetStringValue()
		}
		if u := got["vcs.repository.url.full"]; u == "" || strings.Contains(u, "acme-secret") {
			t.Errorf("%s: url %q", s.Name, u)
		}
		if got["vcs.ref.head.revision"] != rev {
			t.Errorf("%s: revision %q, want %s", s.Name, got["vcs.ref.head.revision"], rev)
		}
	}
}
