package telemetry_test

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/telemetry/spanlogs"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// TestResourceOnEverySignal: traces, metrics and logs carry one resource,
// with the detectors' machine and runtime, pi-otel's version and every
// configured attribute, under the schema of the names the spans use.
func TestResourceOnEverySignal(t *testing.T) {
	dir := t.TempDir()
	paths := map[string]string{"traces": dir + "/t.jsonl", "metrics": dir + "/m.jsonl", "logs": dir + "/l.jsonl"}
	cfg := loadConfig(t, map[string]string{
		"PI_OTEL_TRACES_FILE": paths["traces"], "PI_OTEL_METRICS_FILE": paths["metrics"], "PI_OTEL_LOGS_FILE": paths["logs"],
		"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=ci,host.name=override",
	})
	cfg.ServiceVersion = "v9.8.7"
	tel, _ := setup(t, cfg, telemetry.WithLogProcessor(func(lp log.LoggerProvider) (sdktrace.SpanProcessor, error) {
		return spanlogs.New(lp, spanlogs.Config{}), nil
	}))
	makeTrace(tel.TracerProvider())
	c, err := tel.MeterProvider().Meter("t").Int64Counter("c")
	if err != nil {
		t.Fatal(err)
	}
	c.Add(context.Background(), 1)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	resources := map[string][]*commonpb.KeyValue{}
	schemas := map[string]string{}
	for signal, path := range paths {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		line := []byte(strings.TrimSpace(string(raw)))
		switch signal {
		case "traces":
			req, err := otlpjson.UnmarshalTraces(line)
			if err != nil || len(req.ResourceSpans) == 0 {
				t.Fatalf("traces: %v %s", err, raw)
			}
			resources[signal], schemas[signal] = req.ResourceSpans[0].Resource.Attributes, req.ResourceSpans[0].SchemaUrl
		case "metrics":
			req, err := otlpjson.UnmarshalMetrics(line)
			if err != nil || len(req.ResourceMetrics) == 0 {
				t.Fatalf("metrics: %v %s", err, raw)
			}
			resources[signal], schemas[signal] = req.ResourceMetrics[0].Resource.Attributes, req.ResourceMetrics[0].SchemaUrl
		case "logs":
			req, err := otlpjson.UnmarshalLogs(line)
			if err != nil || len(req.ResourceLogs) == 0 {
				t.Fatalf("logs: %v %s", err, raw)
			}
			resources[signal], schemas[signal] = req.ResourceLogs[0].Resource.Attributes, req.ResourceLogs[0].SchemaUrl
		}
	}
	want := map[string]string{
		"service.name": "pi", "service.version": "v9.8.7", "deployment.environment.name": "ci",
		// The configuration wins over the detector.
		"host.name": "override", "os.type": runtime.GOOS, "process.runtime.name": "go",
		"process.runtime.version": runtime.Version(), "telemetry.sdk.language": "go",
	}
	var first map[string]string
	for signal, kvs := range resources {
		got := map[string]string{}
		for _, kv := range kvs {
			got[kv.Key] = kv.Value.GetStringValue()
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: resource %s = %q, want %q", signal, k, got[k], v)
			}
		}
		if got["process.runtime.description"] == "" || got["service.instance.id"] == "" {
			t.Errorf("%s: resource lacks the runtime's description or the instance: %v", signal, got)
		}
		if schemas[signal] != vocab.SchemaURL {
			t.Errorf("%s: schema %q, want %q", signal, schemas[signal], vocab.SchemaURL)
		}
		if first == nil {
			first = got
		} else if len(got) != len(first) || got["service.instance.id"] != first["service.instance.id"] {
			t.Errorf("%s: resource %v differs from %v", signal, got, first)
		}
	}
}

// TestDetectedNamesAreV141s: the detectors' attributes are taken under
// v1.41's schema, which is right only while v1.41 names them the same.
func TestDetectedNamesAreV141s(t *testing.T) {
	known := map[string]bool{}
	for _, k := range []string{
		string(semconv.HostNameKey), string(semconv.OSTypeKey), string(semconv.OSDescriptionKey),
		string(semconv.OSNameKey), string(semconv.OSVersionKey), string(semconv.OSBuildIDKey),
		string(semconv.ProcessRuntimeNameKey), string(semconv.ProcessRuntimeVersionKey),
		string(semconv.ProcessRuntimeDescriptionKey), string(semconv.TelemetrySDKNameKey),
		string(semconv.TelemetrySDKLanguageKey), string(semconv.TelemetrySDKVersionKey),
		string(semconv.ServiceNameKey), string(semconv.ServiceInstanceIDKey),
	} {
		known[k] = true
	}
	path := t.TempDir() + "/t.jsonl"
	tel, _ := setup(t, loadConfig(t, map[string]string{"PI_OTEL_TRACES_FILE": path}))
	makeTrace(tel.TracerProvider())
	req := shutdownAndRead(t, tel, path, otlpjson.UnmarshalTraces)
	n := 0
	for _, kv := range req.ResourceSpans[0].Resource.Attributes {
		if !known[kv.Key] {
			t.Errorf("resource attribute %s is not one v1.41 names", kv.Key)
		}
		n++
	}
	if n < 8 {
		t.Errorf("only %d resource attributes: the detectors found nothing?", n)
	}
}
