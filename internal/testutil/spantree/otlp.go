package spantree

import (
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
)

// FromOTLP builds the forest of the spans in OTLP export requests, as
// pi-otel's file exporter writes them, ties kept in the order given.
func FromOTLP(tb testing.TB, reqs ...*coltracepb.ExportTraceServiceRequest) []*Node {
	tb.Helper()
	var nodes []*Node
	for _, req := range reqs {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					nodes = append(nodes, fromProto(s))
				}
			}
		}
	}
	return Forest(tb, nodes)
}

func fromProto(s *tracepb.Span) *Node {
	n := &Node{
		Name:     s.GetName(),
		TraceID:  hex.EncodeToString(s.GetTraceId()),
		SpanID:   hex.EncodeToString(s.GetSpanId()),
		ParentID: hex.EncodeToString(s.GetParentSpanId()),
		Kind:     strings.ToLower(strings.TrimPrefix(s.GetKind().String(), "SPAN_KIND_")),
		Status: Status{
			Code:    strings.ToLower(strings.TrimPrefix(s.GetStatus().GetCode().String(), "STATUS_CODE_")),
			Message: s.GetStatus().GetMessage(),
		},
		Start: unixNano(s.GetStartTimeUnixNano()),
		End:   unixNano(s.GetEndTimeUnixNano()),
		Attrs: protoAttrs(s.GetAttributes()),
	}
	for _, e := range s.GetEvents() {
		n.Events = append(n.Events, Event{Name: e.GetName(), Time: unixNano(e.GetTimeUnixNano()), Attrs: protoAttrs(e.GetAttributes())})
	}
	for _, l := range s.GetLinks() {
		n.Links = append(n.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
	}
	return n
}

func protoAttrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = Text(protoValue(kv.GetValue()))
	}
	return out
}

func protoValue(v *commonpb.AnyValue) any {
	switch v := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return v.StringValue
	case *commonpb.AnyValue_IntValue:
		return v.IntValue
	case *commonpb.AnyValue_BoolValue:
		return v.BoolValue
	case *commonpb.AnyValue_DoubleValue:
		return v.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return v.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		out := []any{}
		for _, e := range v.ArrayValue.GetValues() {
			out = append(out, protoValue(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		out := map[string]any{}
		for _, kv := range v.KvlistValue.GetValues() {
			out[kv.GetKey()] = protoValue(kv.GetValue())
		}
		return out
	}
	return nil
}

func unixNano(n uint64) time.Time { return time.Unix(0, int64(n)) }

// ReadOTLPFile builds the forest of an OTLP/JSON lines file, as
// --traces-file writes it.
func ReadOTLPFile(tb testing.TB, path string) []*Node {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var reqs []*coltracepb.ExportTraceServiceRequest
	for i, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		req, err := otlpjson.UnmarshalTraces(line)
		if err != nil {
			tb.Fatalf("%s line %d: %v", path, i+1, err)
		}
		reqs = append(reqs, req)
	}
	return FromOTLP(tb, reqs...)
}
