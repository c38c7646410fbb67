package otlpfile

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// appendTraces writes spans as the OTLP/JSON line marshalLine writes
// for TraceRequest(spans), byte for byte, straight from the spans: no
// protobuf messages, no protojson, no second pass to turn ids into hex.
// A history backfill makes tens of thousands of spans per second, and that
// path cost six times the encoding itself (TestAppendTracesMatchesMarshal
// holds the two equal).
//
// The layout is what marshalLine gives: encoding/json's encoding of
// protojson's output, so every object's keys are sorted, fields holding
// proto3 zero values are left out (oneof members are not), 64-bit
// integers are quoted and enums are numbers. A string that is not valid
// UTF-8 is an error, as protojson makes it.
func appendTraces(b []byte, spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	var e traceEncoder
	e.b = append(b, `{"resourceSpans":[`...)
	for i, rg := range group(len(spans), func(i int) (*resource.Resource, instrumentation.Scope) {
		return spans[i].Resource(), spans[i].InstrumentationScope()
	}) {
		e.comma(i)
		e.resourceSpans(rg, spans)
	}
	e.b = append(e.b, "]}\n"...)
	return e.b, e.err
}

type traceEncoder struct {
	b   []byte
	err error
	// first tells whether the object being written has no field yet.
	first bool
}

func (e *traceEncoder) comma(i int) {
	if i > 0 {
		e.b = append(e.b, ',')
	}
}

// open starts an object; key starts each of its fields, in sorted order.
func (e *traceEncoder) open() {
	e.b = append(e.b, '{')
	e.first = true
}

func (e *traceEncoder) key(k string) {
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

func (e *traceEncoder) close() {
	e.b = append(e.b, '}')
	e.first = false
}

func (e *traceEncoder) resourceSpans(rg *resourceGroup, spans []sdktrace.ReadOnlySpan) {
	e.open()
	e.key("resource")
	e.open()
	e.attributes("attributes", rg.res.Attributes())
	e.close()
	e.stringField("schemaUrl", rg.res.SchemaURL())
	e.key("scopeSpans")
	e.b = append(e.b, '[')
	for i, sg := range rg.scopes {
		e.comma(i)
		e.open()
		e.stringField("schemaUrl", sg.scope.SchemaURL)
		e.key("scope")
		e.open()
		e.attributes("attributes", sg.scope.Attributes.ToSlice())
		e.stringField("name", sg.scope.Name)
		e.stringField("version", sg.scope.Version)
		e.close()
		e.key("spans")
		e.b = append(e.b, '[')
		for j, k := range sg.items {
			e.comma(j)
			e.span(spans[k])
		}
		e.b = append(e.b, ']')
		e.close()
	}
	e.b = append(e.b, ']')
	e.close()
}

func (e *traceEncoder) span(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	e.open()
	e.attributes("attributes", s.Attributes())
	e.countField("droppedAttributesCount", s.DroppedAttributes())
	e.countField("droppedEventsCount", s.DroppedEvents())
	e.countField("droppedLinksCount", s.DroppedLinks())
	e.timeField("endTimeUnixNano", unixNano(s.EndTime()))
	if evs := s.Events(); len(evs) > 0 {
		e.key("events")
		e.b = append(e.b, '[')
		for i, ev := range evs {
			e.comma(i)
			e.open()
			e.attributes("attributes", ev.Attributes)
			e.countField("droppedAttributesCount", ev.DroppedAttributeCount)
			e.stringField("name", ev.Name)
			e.timeField("timeUnixNano", unixNano(ev.Time))
			e.close()
		}
		e.b = append(e.b, ']')
	}
	e.key("flags")
	e.b = strconv.AppendUint(e.b, uint64(contextFlags(sc.TraceFlags(), s.Parent().IsRemote())), 10)
	if k := s.SpanKind(); k != 0 {
		e.key("kind")
		e.b = strconv.AppendInt(e.b, int64(k), 10)
	}
	if ls := s.Links(); len(ls) > 0 {
		e.key("links")
		e.b = append(e.b, '[')
		for i, l := range ls {
			e.comma(i)
			e.open()
			e.attributes("attributes", l.Attributes)
			e.countField("droppedAttributesCount", l.DroppedAttributeCount)
			e.key("flags")
			e.b = strconv.AppendUint(e.b, uint64(contextFlags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote())), 10)
			e.ids(l.SpanContext)
			e.close()
		}
		e.b = append(e.b, ']')
	}
	e.stringField("name", s.Name())
	if parent := s.Parent(); parent.SpanID().IsValid() {
		psid := parent.SpanID()
		e.hexField("parentSpanId", psid[:])
	}
	sid := sc.SpanID()
	e.hexField("spanId", sid[:])
	e.timeField("startTimeUnixNano", unixNano(s.StartTime()))
	e.key("status")
	e.open()
	// OpenTelemetry Go and OTLP number the codes differently; only an
	// error keeps its description (statusProto).
	switch st := s.Status(); st.Code {
	case codes.Error:
		e.key("code")
		e.b = append(e.b, '2')
		e.stringField("message", st.Description)
	case codes.Ok:
		e.key("code")
		e.b = append(e.b, '1')
	}
	e.close()
	tid := sc.TraceID()
	e.hexField("traceId", tid[:])
	e.stringField("traceState", sc.TraceState().String())
	e.close()
}

// ids writes a link's spanId, traceId and traceState, in sorted order.
func (e *traceEncoder) ids(sc trace.SpanContext) {
	sid, tid := sc.SpanID(), sc.TraceID()
	e.hexField("spanId", sid[:])
	e.hexField("traceId", tid[:])
	e.stringField("traceState", sc.TraceState().String())
}

func (e *traceEncoder) hexField(k string, id []byte) {
	e.key(k)
	e.b = append(e.b, '"')
	e.b = hex.AppendEncode(e.b, id)
	e.b = append(e.b, '"')
}

// stringField writes a string field, unless it is empty (proto3 leaves it
// out).
func (e *traceEncoder) stringField(k, v string) {
	if v == "" {
		return
	}
	e.key(k)
	e.string(v)
}

func (e *traceEncoder) countField(k string, n int) {
	if n <= 0 {
		return
	}
	e.key(k)
	e.b = strconv.AppendUint(e.b, uint64(uint32(n)), 10)
}

// timeField writes a uint64 as protojson does: quoted.
func (e *traceEncoder) timeField(k string, ns uint64) {
	if ns == 0 {
		return
	}
	e.key(k)
	e.b = append(e.b, '"')
	e.b = strconv.AppendUint(e.b, ns, 10)
	e.b = append(e.b, '"')
}

func (e *traceEncoder) attributes(k string, kvs []attribute.KeyValue) {
	if len(kvs) == 0 {
		return
	}
	e.key(k)
	e.keyValues(kvs)
}

func (e *traceEncoder) keyValues(kvs []attribute.KeyValue) {
	e.b = append(e.b, '[')
	for i, kv := range kvs {
		e.comma(i)
		e.open()
		e.stringField("key", string(kv.Key))
		e.key("value")
		e.value(kv.Value)
		e.close()
	}
	e.b = append(e.b, ']')
}

// value writes an AnyValue as valueProto makes it. Oneof members are
// written even when they hold a zero value.
func (e *traceEncoder) value(v attribute.Value) {
	e.open()
	switch v.Type() {
	case attribute.BOOL:
		e.key("boolValue")
		e.b = strconv.AppendBool(e.b, v.AsBool())
	case attribute.INT64:
		e.key("intValue")
		e.b = append(e.b, '"')
		e.b = strconv.AppendInt(e.b, v.AsInt64(), 10)
		e.b = append(e.b, '"')
	case attribute.FLOAT64:
		e.key("doubleValue")
		e.float(v.AsFloat64())
	case attribute.STRING:
		e.key("stringValue")
		e.string(v.AsString())
	case attribute.BYTESLICE:
		e.key("bytesValue")
		e.b = append(e.b, '"')
		e.b = base64.StdEncoding.AppendEncode(e.b, v.AsByteSlice())
		e.b = append(e.b, '"')
	case attribute.BOOLSLICE:
		array(e, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		array(e, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		array(e, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		array(e, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		array(e, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		e.key("kvlistValue")
		e.open()
		if m := v.AsMap(); len(m) > 0 {
			e.key("values")
			e.keyValues(m)
		}
		e.close()
	}
	e.close()
}

func array[T any](e *traceEncoder, vals []T, wrap func(T) attribute.Value) {
	e.key("arrayValue")
	e.open()
	if len(vals) > 0 {
		e.key("values")
		e.b = append(e.b, '[')
		for i, v := range vals {
			e.comma(i)
			e.value(wrap(v))
		}
		e.b = append(e.b, ']')
	}
	e.close()
}

// float writes a double as protojson does (its rules are encoding/json's),
// with the non-finite values as strings.
func (e *traceEncoder) float(f float64) {
	switch {
	case math.IsNaN(f):
		e.b = append(e.b, `"NaN"`...)
		return
	case math.IsInf(f, 1):
		e.b = append(e.b, `"Infinity"`...)
		return
	case math.IsInf(f, -1):
		e.b = append(e.b, `"-Infinity"`...)
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 becomes 1e-7.
		n := len(e.b)
		if n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
			e.b[n-2] = e.b[n-1]
			e.b = e.b[:n-1]
		}
	}
}

const hexDigits = "0123456789abcdef"

// string writes s quoted as encoding/json does without HTML escaping.
func (e *traceEncoder) string(s string) {
	if !utf8.ValidString(s) {
		if e.err == nil {
			e.err = fmt.Errorf("otlpfile: string field contains invalid UTF-8: %q", s[:min(len(s), 64)])
		}
		s = "" // the line is not written; keep the layout simple
	}
	e.b = append(e.b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			e.b = append(e.b, s[start:i]...)
			switch c {
			case '\\', '"':
				e.b = append(e.b, '\\', c)
			case '\b':
				e.b = append(e.b, '\\', 'b')
			case '\f':
				e.b = append(e.b, '\\', 'f')
			case '\n':
				e.b = append(e.b, '\\', 'n')
			case '\r':
				e.b = append(e.b, '\\', 'r')
			case '\t':
				e.b = append(e.b, '\\', 't')
			default:
				e.b = append(e.b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		// encoding/json escapes LINE SEPARATOR and PARAGRAPH SEPARATOR.
		if r == '\u2028' || r == '\u2029' {
			e.b = append(e.b, s[start:i]...)
			e.b = append(e.b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	e.b = append(e.b, s[start:]...)
	e.b = append(e.b, '"')
}
