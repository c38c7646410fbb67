package otlpfile

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// idFields are the JSON fields holding trace and span ids: in spans, links
// and exemplars. Attribute keys are values, not JSON field names, so an
// attribute called "traceId" is never touched.
var idFields = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}

// marshalLine encodes m as one OTLP/JSON line, newline included.
func marshalLine(m proto.Message) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	// protojson writes bytes as base64; rewrite the ids as hex. Decoding
	// numbers as json.Number keeps every value exactly as protojson wrote it.
	tree, err := decodeTree(raw)
	if err != nil {
		return nil, err
	}
	if err := idsToHex(tree); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(tree); err != nil { // Encode ends the line with '\n'.
		return nil, err
	}
	return buf.Bytes(), nil
}

func decodeTree(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return tree, nil
}

// idsToHex rewrites the base64 ids in the decoded JSON v as hex.
func idsToHex(v any) error {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if s, ok := child.(string); ok && idFields[k] {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return fmt.Errorf("%s %q: %w", k, s, err)
				}
				t[k] = hex.EncodeToString(b)
				continue
			}
			if err := idsToHex(child); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range t {
			if err := idsToHex(child); err != nil {
				return err
			}
		}
	}
	return nil
}

func unixNano(t time.Time) uint64 {
	if t.IsZero() {
		return 0
	}
	return uint64(t.UnixNano())
}

func attributesProto(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: valueProto(kv.Value)})
	}
	return out
}

func valueProto(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BYTESLICE:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}}
	case attribute.BOOLSLICE:
		return arrayOf(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return arrayOf(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayOf(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayOf(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return arrayOf(v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{
			KvlistValue: &commonpb.KeyValueList{Values: attributesProto(v.AsMap())},
		}}
	}
	// EMPTY, and any type added later: an AnyValue with no value is OTLP's
	// empty value.
	return &commonpb.AnyValue{}
}

func arrayOf[T any](vals []T, wrap func(T) attribute.Value) *commonpb.AnyValue {
	arr := &commonpb.ArrayValue{Values: make([]*commonpb.AnyValue, 0, len(vals))}
	for _, v := range vals {
		arr.Values = append(arr.Values, valueProto(wrap(v)))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
}
