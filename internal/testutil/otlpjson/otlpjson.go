// Package otlpjson reads the OTLP/JSON lines pi-otel's file exporters
// (internal/telemetry/otlpfile) write, for the tests that check them: ids
// in hex, as OTLP/JSON has them, and also in base64, as plain protobuf JSON
// has them. pi-otel itself only writes these lines.
package otlpjson

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// UnmarshalTraces decodes one OTLP/JSON line. It takes ids in hex, as
// OTLP/JSON has them, and also base64, as plain protobuf JSON has them.
func UnmarshalTraces(line []byte) (*coltracepb.ExportTraceServiceRequest, error) {
	req := &coltracepb.ExportTraceServiceRequest{}
	return req, unmarshalLine(line, req)
}

// UnmarshalMetrics decodes one OTLP/JSON line, as UnmarshalTraces does.
func UnmarshalMetrics(line []byte) (*colmetricpb.ExportMetricsServiceRequest, error) {
	req := &colmetricpb.ExportMetricsServiceRequest{}
	return req, unmarshalLine(line, req)
}

// UnmarshalLogs decodes one OTLP/JSON line, as UnmarshalTraces does.
func UnmarshalLogs(line []byte) (*collogpb.ExportLogsServiceRequest, error) {
	req := &collogpb.ExportLogsServiceRequest{}
	return req, unmarshalLine(line, req)
}

// idFields are the JSON fields holding trace and span ids, with their
// sizes in bytes: in spans, links, exemplars and log records. Attribute
// keys are values, not JSON field names, so an attribute called "traceId"
// is never touched.
var idFields = map[string]int{"traceId": 16, "spanId": 8, "parentSpanId": 8}

// unmarshalLine decodes the first JSON value of line into m, its hex ids
// turned into the base64 protojson reads.
func unmarshalLine(line []byte, m proto.Message) error {
	// Numbers as json.Number keep every value exactly as it was written.
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return err
	}
	idsToBase64(tree)
	raw, err := json.Marshal(tree)
	if err != nil {
		return err
	}
	return protojson.Unmarshal(raw, m)
}

// idsToBase64 rewrites the hex ids in the decoded JSON v as base64.
func idsToBase64(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if size, ok := idFields[k]; ok {
				if s, ok := child.(string); ok {
					t[k] = hexToBase64(s, size)
					continue
				}
			}
			idsToBase64(child)
		}
	case []any:
		for _, child := range t {
			idsToBase64(child)
		}
	}
}

// hexToBase64 converts a hex id of the right size and leaves anything else
// for protojson, which reads base64.
func hexToBase64(s string, size int) string {
	if len(s) != 2*size {
		return s
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return s
	}
	return base64.StdEncoding.EncodeToString(b)
}
