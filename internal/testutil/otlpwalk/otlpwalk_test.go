package otlpwalk

import (
	"slices"
	"testing"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func TestWalksEveryLevelInOrder(t *testing.T) {
	traces := &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "a"}, {Name: "b"}}}, {}}},
		{},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "c"}}}}},
	}}
	var names []string
	for s := range Spans(traces) {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("spans %v", names)
	}
	for s := range Spans(traces) {
		if s.Name != "a" {
			t.Errorf("walk went on after the loop stopped, at %s", s.Name)
		}
		break
	}

	metrics := &colmetricspb.ExportMetricsServiceRequest{ResourceMetrics: []*metricspb.ResourceMetrics{
		{ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{{Name: "m1"}}}, {Metrics: []*metricspb.Metric{{Name: "m2"}}}}},
	}}
	names = nil
	for m := range Metrics(metrics) {
		names = append(names, m.Name)
	}
	if !slices.Equal(names, []string{"m1", "m2"}) {
		t.Errorf("metrics %v", names)
	}

	logs := &collogspb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{
		{ScopeLogs: []*logspb.ScopeLogs{{LogRecords: []*logspb.LogRecord{{EventName: "e1"}, {EventName: "e2"}}}}},
	}}
	names = nil
	for r := range LogRecords(logs) {
		names = append(names, r.EventName)
	}
	if !slices.Equal(names, []string{"e1", "e2"}) {
		t.Errorf("log records %v", names)
	}
	for range LogRecords(nil) {
		t.Error("a nil request has records")
	}
}
