// Package otlpwalk yields the items of OTLP export requests (spans, metrics,
// log records) past their resource and scope levels, which the tests that
// count or look up items do not care about.
package otlpwalk

import (
	"iter"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// Spans yields every span of req, in order.
func Spans(req *coltracepb.ExportTraceServiceRequest) iter.Seq[*tracepb.Span] {
	return flatten(req.GetResourceSpans(), (*tracepb.ResourceSpans).GetScopeSpans, (*tracepb.ScopeSpans).GetSpans)
}

// Metrics yields every metric of req, in order.
func Metrics(req *colmetricspb.ExportMetricsServiceRequest) iter.Seq[*metricspb.Metric] {
	return flatten(req.GetResourceMetrics(), (*metricspb.ResourceMetrics).GetScopeMetrics, (*metricspb.ScopeMetrics).GetMetrics)
}

// LogRecords yields every log record of req, in order.
func LogRecords(req *collogspb.ExportLogsServiceRequest) iter.Seq[*logspb.LogRecord] {
	return flatten(req.GetResourceLogs(), (*logspb.ResourceLogs).GetScopeLogs, (*logspb.ScopeLogs).GetLogRecords)
}

// flatten is the one walk of OTLP's three levels: resources, their scopes,
// the scopes' items.
func flatten[R, S, T any](resources []R, scopes func(R) []S, items func(S) []T) iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, r := range resources {
			for _, s := range scopes(r) {
				for _, it := range items(s) {
					if !yield(it) {
						return
					}
				}
			}
		}
	}
}
