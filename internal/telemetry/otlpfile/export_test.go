package otlpfile

import coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"

// MarshalTraces encodes req as one OTLP/JSON line, newline included.
// TraceExporter writes the same bytes straight from the spans, without
// building req (appendTraces); this is the reference its tests hold it to.
func MarshalTraces(req *coltracepb.ExportTraceServiceRequest) ([]byte, error) {
	return marshalLine(req)
}
