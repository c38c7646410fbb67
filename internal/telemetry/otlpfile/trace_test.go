package otlpfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// recordSpans makes a small trace through the real SDK: a server span under a
// remote parent, a child with every attribute type, events, a link, an error
// status and limits low enough to drop things; plus a span of a second scope
// and a root span of a second trace.
func recordSpans(t testing.TB) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "pi"), attribute.Int("pid", 42))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit:   -1,
			AttributeCountLimit:         12,
			EventCountLimit:             2,
			LinkCountLimit:              1,
			AttributePerEventCountLimit: 1,
			AttributePerLinkCountLimit:  1,
		}),
	)
	ctx := context.Background()

	ts, err := trace.ParseTraceState("vendor=abc")
	if err != nil {
		t.Fatal(err)
	}
	// Sampled remote span contexts with a trace state.
	remoteSC := func(tid trace.TraceID, sid trace.SpanID) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	}
	remote := remoteSC(trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7})
	linked := remoteSC(trace.TraceID{0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, trace.SpanID{0xbb, 1, 2, 3, 4, 5, 6, 7})

	tr := tp.Tracer("pi-otel/mapper", trace.WithInstrumentationVersion("0.1.0"),
		trace.WithInstrumentationAttributes(attribute.String("scope.attr", "x")))
	ctx, root := tr.Start(trace.ContextWithRemoteSpanContext(ctx, remote), "invoke_agent pi",
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(t0))
	_, child := tr.Start(ctx, "execute_tool bash", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(t0.Add(time.Millisecond)),
		trace.WithLinks(
			trace.Link{SpanContext: remote},
			// The SDK keeps the newest links when over the limit.
			trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("l1", "a"), attribute.String("l2", "b")}},
		),
		trace.WithAttributes(
			attribute.Bool("b", true),
			attribute.Int64("i", -7),
			attribute.Float64("f", 1.5),
			attribute.String("s", "<html> & \"quotes\""),
			attribute.BoolSlice("bs", []bool{true, false}),
			attribute.Int64Slice("is", []int64{1, 9007199254740993}),
			attribute.Float64Slice("fs", []float64{0.25, -2}),
			attribute.StringSlice("ss", []string{"a", "b"}),
			attribute.ByteSlice("by", []byte{0, 1, 0xff}),
			attribute.Slice("mixed", attribute.IntValue(1), attribute.StringValue("two")),
			attribute.Map("m", attribute.String("k", "v"), attribute.Bool("ok", false)),
			attribute.String("traceId", "not an id"),
			attribute.String("over", "limit1"),
			attribute.String("over2", "limit2"),
		))
	child.AddEvent("e1", trace.WithTimestamp(t0.Add(2*time.Millisecond)),
		trace.WithAttributes(attribute.Int("n", 1), attribute.Int("dropped", 2)))
	child.AddEvent("e2", trace.WithTimestamp(t0.Add(3*time.Millisecond)))
	child.AddEvent("e3", trace.WithTimestamp(t0.Add(4*time.Millisecond)))
	child.SetStatus(codes.Error, "exit code 1")
	child.End(trace.WithTimestamp(t0.Add(5 * time.Millisecond)))
	root.SetStatus(codes.Ok, "ignored for ok")
	root.End(trace.WithTimestamp(t0.Add(time.Second)))

	_, other := tp.Tracer("other").Start(context.Background(), "lonely", trace.WithTimestamp(t0))
	other.End(trace.WithTimestamp(t0.Add(time.Microsecond)))

	return rec.Ended()
}

func TestTraceRoundTrip(t *testing.T) {
	spans := recordSpans(t)
	var buf bytes.Buffer
	exp := otlpfile.NewTraceExporter(&buf)
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("want exactly one line, got %q", out)
	}

	checkRawJSON(t, []byte(out), spans)

	req, err := otlpjson.UnmarshalTraces([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceSpans) != 1 {
		t.Fatalf("resources = %d, want 1 (all spans share one resource)", len(req.ResourceSpans))
	}
	rs := req.ResourceSpans[0]
	if rs.SchemaUrl != "https://opentelemetry.io/schemas/1.26.0" {
		t.Errorf("resource schema = %q", rs.SchemaUrl)
	}
	wantRes := []*commonpb.KeyValue{
		{Key: "pid", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 42}}},
		{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "pi"}}},
	}
	if !equalKVs(rs.Resource.Attributes, wantRes) {
		t.Errorf("resource attributes = %v", rs.Resource.Attributes)
	}
	if len(rs.ScopeSpans) != 2 {
		t.Fatalf("scopes = %d, want 2", len(rs.ScopeSpans))
	}
	mapper, other := rs.ScopeSpans[0], rs.ScopeSpans[1]
	if mapper.Scope.Name != "pi-otel/mapper" || mapper.Scope.Version != "0.1.0" ||
		len(mapper.Scope.Attributes) != 1 || mapper.Scope.Attributes[0].Key != "scope.attr" {
		t.Errorf("first scope = %v", mapper.Scope)
	}
	if other.Scope.Name != "other" || len(other.Spans) != 1 || other.Spans[0].Name != "lonely" {
		t.Errorf("second scope = %v", other)
	}
	if len(mapper.Spans) != 2 {
		t.Fatalf("mapper spans = %d, want 2", len(mapper.Spans))
	}
	// Spans keep the order they were given in: the child ended first.
	child, root := mapper.Spans[0], mapper.Spans[1]

	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	rc, rr := byName["execute_tool bash"], byName["invoke_agent pi"]

	// Ids survive the hex round trip.
	if trace.TraceID(child.TraceId) != rc.SpanContext().TraceID() || trace.SpanID(child.SpanId) != rc.SpanContext().SpanID() ||
		trace.SpanID(child.ParentSpanId) != rr.SpanContext().SpanID() {
		t.Errorf("child ids: %x %x %x", child.TraceId, child.SpanId, child.ParentSpanId)
	}
	if trace.SpanID(root.ParentSpanId) != (trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}) {
		t.Errorf("root parent = %x, want the remote parent", root.ParentSpanId)
	}
	if other.Spans[0].ParentSpanId != nil {
		t.Errorf("a root span has parent %x", other.Spans[0].ParentSpanId)
	}

	// Kind, times, trace state, flags.
	if root.Kind != tracepb.Span_SPAN_KIND_SERVER || child.Kind != tracepb.Span_SPAN_KIND_CLIENT ||
		other.Spans[0].Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("kinds = %v %v %v", root.Kind, child.Kind, other.Spans[0].Kind)
	}
	if root.StartTimeUnixNano != uint64(t0.UnixNano()) || root.EndTimeUnixNano != uint64(t0.Add(time.Second).UnixNano()) {
		t.Errorf("root times = %d..%d", root.StartTimeUnixNano, root.EndTimeUnixNano)
	}
	if root.TraceState != "vendor=abc" {
		t.Errorf("trace state = %q", root.TraceState)
	}
	// Sampled (0x01), has-is-remote (0x100), and for the root a remote parent (0x200).
	if root.Flags != 0x301 || child.Flags != 0x101 {
		t.Errorf("flags = %#x, %#x", root.Flags, child.Flags)
	}

	// Status codes use OTLP's numbering; only errors keep a message.
	if root.Status.Code != tracepb.Status_STATUS_CODE_OK || root.Status.Message != "" {
		t.Errorf("root status = %v", root.Status)
	}
	if child.Status.Code != tracepb.Status_STATUS_CODE_ERROR || child.Status.Message != "exit code 1" {
		t.Errorf("child status = %v", child.Status)
	}
	if other.Spans[0].Status.Code != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("unset status = %v", other.Spans[0].Status)
	}

	// Every attribute type.
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	i64 := func(i int64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
	}
	dbl := func(f float64) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}}
	}
	bln := func(b bool) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
	}
	arr := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	wantAttrs := []*commonpb.KeyValue{
		{Key: "b", Value: bln(true)},
		{Key: "i", Value: i64(-7)},
		{Key: "f", Value: dbl(1.5)},
		{Key: "s", Value: str("<html> & \"quotes\"")},
		{Key: "bs", Value: arr(bln(true), bln(false))},
		{Key: "is", Value: arr(i64(1), i64(9007199254740993))},
		{Key: "fs", Value: arr(dbl(0.25), dbl(-2))},
		{Key: "ss", Value: arr(str("a"), str("b"))},
		{Key: "by", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 0xff}}}},
		{Key: "mixed", Value: arr(i64(1), str("two"))},
		{Key: "m", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
			Values: []*commonpb.KeyValue{{Key: "k", Value: str("v")}, {Key: "ok", Value: bln(false)}},
		}}}},
		{Key: "traceId", Value: str("not an id")},
	}
	if !equalKVs(child.Attributes, wantAttrs) {
		t.Errorf("child attributes:\n got %v\nwant %v", child.Attributes, wantAttrs)
	}
	if child.DroppedAttributesCount != 2 {
		t.Errorf("dropped attributes = %d, want 2", child.DroppedAttributesCount)
	}

	// Events and links, with what the limits dropped.
	if len(child.Events) != 2 || child.DroppedEventsCount != 1 {
		t.Fatalf("events = %d (dropped %d), want 2 (dropped 1)", len(child.Events), child.DroppedEventsCount)
	}
	// The SDK keeps the newest events when over the limit.
	e := child.Events[0]
	if e.Name != "e2" || e.TimeUnixNano != uint64(t0.Add(3*time.Millisecond).UnixNano()) {
		t.Errorf("first kept event = %v", e)
	}
	if len(child.Links) != 1 || child.DroppedLinksCount != 1 {
		t.Fatalf("links = %d (dropped %d), want 1 (dropped 1)", len(child.Links), child.DroppedLinksCount)
	}
	l := child.Links[0]
	if trace.TraceID(l.TraceId) != rc.Links()[0].SpanContext.TraceID() || trace.SpanID(l.SpanId) != rc.Links()[0].SpanContext.SpanID() ||
		l.TraceState != "vendor=abc" || l.Flags != 0x301 || len(l.Attributes) != 1 || l.DroppedAttributesCount != 1 {
		t.Errorf("link = %v", l)
	}
}

func TestEventAttributesDropped(t *testing.T) {
	// Separate from the round trip above so the event under the limit is
	// checked too.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeValueLengthLimit: -1, AttributeCountLimit: 8,
			EventCountLimit: 8, LinkCountLimit: 8, AttributePerEventCountLimit: 1, AttributePerLinkCountLimit: 8}))
	_, s := tp.Tracer("t").Start(context.Background(), "s")
	s.AddEvent("e", trace.WithAttributes(attribute.Int("a", 1), attribute.Int("b", 2), attribute.Int("c", 3)))
	s.End()
	req := otlpfile.TraceRequest(rec.Ended())
	ev := req.ResourceSpans[0].ScopeSpans[0].Spans[0].Events[0]
	if len(ev.Attributes) != 1 || ev.DroppedAttributesCount != 2 {
		t.Errorf("event = %v, want 1 attribute and 2 dropped", ev)
	}
}

// checkRawJSON looks at the line as any OTLP/JSON reader would: hex ids,
// integer enums, camelCase names.
func checkRawJSON(t *testing.T, line []byte, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	var doc struct {
		ResourceSpans []struct {
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string          `json:"traceId"`
					SpanID       string          `json:"spanId"`
					ParentSpanID string          `json:"parentSpanId"`
					Name         string          `json:"name"`
					Kind         json.RawMessage `json:"kind"`
					Status       struct {
						Code json.RawMessage `json:"code"`
					} `json:"status"`
					Links []struct {
						TraceID string `json:"traceId"`
						SpanID  string `json:"spanId"`
					} `json:"links"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(line, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	want := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		want[s.SpanContext().SpanID().String()] = s
	}
	seen := 0
	for _, rs := range doc.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				seen++
				r, ok := want[s.SpanID]
				if !ok {
					t.Errorf("spanId %q is not the hex of a recorded span id", s.SpanID)
					continue
				}
				if s.TraceID != r.SpanContext().TraceID().String() {
					t.Errorf("traceId %q, want %q", s.TraceID, r.SpanContext().TraceID())
				}
				if r.Parent().IsValid() && s.ParentSpanID != r.Parent().SpanID().String() {
					t.Errorf("parentSpanId %q, want %q", s.ParentSpanID, r.Parent().SpanID())
				}
				if string(s.Kind) != "" && strings.Trim(string(s.Kind), "0123456789") != "" {
					t.Errorf("kind %s is not an integer", s.Kind)
				}
				if string(s.Status.Code) != "" && strings.Trim(string(s.Status.Code), "0123456789") != "" {
					t.Errorf("status code %s is not an integer", s.Status.Code)
				}
				for i, l := range s.Links {
					rl := r.Links()[i].SpanContext
					if l.TraceID != rl.TraceID().String() || l.SpanID != rl.SpanID().String() {
						t.Errorf("link ids %q %q, want %s %s", l.TraceID, l.SpanID, rl.TraceID(), rl.SpanID())
					}
				}
			}
		}
	}
	if seen != len(spans) {
		t.Errorf("line holds %d spans, want %d", seen, len(spans))
	}
	if !bytes.Contains(line, []byte(`"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"`)) {
		t.Errorf("line lacks the hex trace id: %s", line)
	}
	if !bytes.Contains(line, []byte(`"kind":2`)) {
		t.Errorf("line lacks the server kind as an integer: %s", line)
	}
}

func equalKVs(got, want []*commonpb.KeyValue) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			return false
		}
	}
	return true
}

func TestTraceExporterLines(t *testing.T) {
	spans := recordSpans(t)
	var buf countingWriter
	exp := otlpfile.NewTraceExporter(&buf)
	ctx := context.Background()
	if err := exp.ExportSpans(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if buf.writes != 0 {
		t.Errorf("an empty batch wrote %d times", buf.writes)
	}
	for i := range spans {
		if err := exp.ExportSpans(ctx, spans[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	// One Write per batch, so appenders in other processes cannot split a line.
	if buf.writes != len(spans) || strings.Count(buf.String(), "\n") != len(spans) {
		t.Errorf("%d batches gave %d writes and %d lines", len(spans), buf.writes, strings.Count(buf.String(), "\n"))
	}
	for i, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		req, err := otlpjson.UnmarshalTraces([]byte(line))
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		got := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
		if got.Name != spans[i].Name() {
			t.Errorf("line %d holds %q, want %q", i, got.Name, spans[i].Name())
		}
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	if buf.writes != len(spans) {
		t.Errorf("wrote after Shutdown")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := otlpfile.NewTraceExporter(&buf).ExportSpans(cancelled, spans); err == nil {
		t.Errorf("export with a cancelled context succeeded")
	}
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func BenchmarkTraceLine(b *testing.B) {
	spans := recordSpans(b)
	exp := otlpfile.NewTraceExporter(io.Discard)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := exp.ExportSpans(ctx, spans); err != nil {
			b.Fatal(err)
		}
	}
}
