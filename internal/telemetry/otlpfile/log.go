package otlpfile

import (
	"context"
	"io"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logpb "go.opentelemetry.io/proto/otlp/logs/v1"
)

// LogExporter is an sdklog.Exporter that writes each batch of log records
// as one ExportLogsServiceRequest line.
type LogExporter struct {
	lineWriter
}

var _ sdklog.Exporter = (*LogExporter)(nil)

// NewLogExporter returns an exporter writing to w. It never closes w.
func NewLogExporter(w io.Writer) *LogExporter {
	return &LogExporter{lineWriter{w: w}}
}

// Export writes records as one line, in a single Write.
func (e *LogExporter) Export(ctx context.Context, records []sdklog.Record) error {
	if len(records) == 0 {
		return nil
	}
	return e.export(ctx, func() ([]byte, error) { return marshalLine(LogRequest(records)) })
}

// ForceFlush does nothing: every line is written as it is exported.
func (e *LogExporter) ForceFlush(context.Context) error { return nil }

// LogRequest converts records to an export request, grouped by resource and
// then by instrumentation scope, each group in order of first appearance.
func LogRequest(records []sdklog.Record) *collogpb.ExportLogsServiceRequest {
	req := &collogpb.ExportLogsServiceRequest{}
	for _, rg := range group(len(records), func(i int) (*resource.Resource, instrumentation.Scope) {
		res := records[i].Resource()
		if res == nil {
			res = resource.Empty()
		}
		return res, records[i].InstrumentationScope()
	}) {
		rl := &logpb.ResourceLogs{Resource: resourceProto(rg.res), SchemaUrl: rg.res.SchemaURL()}
		for _, sg := range rg.scopes {
			sl := &logpb.ScopeLogs{Scope: scopeProto(sg.scope), SchemaUrl: sg.scope.SchemaURL}
			for _, i := range sg.items {
				sl.LogRecords = append(sl.LogRecords, logProto(&records[i]))
			}
			rl.ScopeLogs = append(rl.ScopeLogs, sl)
		}
		req.ResourceLogs = append(req.ResourceLogs, rl)
	}
	return req
}

func logProto(r *sdklog.Record) *logpb.LogRecord {
	attrs := make([]attribute.KeyValue, 0, r.AttributesLen())
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		attrs = append(attrs, kv)
		return true
	})
	p := &logpb.LogRecord{
		TimeUnixNano:           unixNano(r.Timestamp()),
		ObservedTimeUnixNano:   unixNano(r.ObservedTimestamp()),
		SeverityNumber:         logpb.SeverityNumber(r.Severity()), // the same numbers
		SeverityText:           r.SeverityText(),
		EventName:              r.EventName(),
		Attributes:             attributesProto(attrs),
		DroppedAttributesCount: uint32(max(r.DroppedAttributes(), 0)),
		Flags:                  uint32(r.TraceFlags()),
	}
	if body := r.Body(); body.Type() != attribute.EMPTY {
		p.Body = valueProto(body)
	}
	if tid := r.TraceID(); tid.IsValid() {
		p.TraceId = tid[:]
	}
	if sid := r.SpanID(); sid.IsValid() {
		p.SpanId = sid[:]
	}
	return p
}
