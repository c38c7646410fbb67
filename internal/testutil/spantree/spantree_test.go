package spantree

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestSourcesRenderAlike: the same tree recorded by the SDK and read from
// OTLP renders the same, attribute values included.
func TestSourcesRenderAlike(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, root := tp.Tracer("t").Start(context.Background(), "root")
	root.SetAttributes(attribute.String("pi.outcome", "ok"), attribute.Int64("n", 3), attribute.Float64("f", 0.25), attribute.StringSlice("s", []string{"stop"}))
	_, a := tp.Tracer("t").Start(ctx, "a")
	a.SetStatus(codes.Error, "boom")
	a.SetAttributes(attribute.String("error.type", "529"))
	a.End()
	_, b := tp.Tracer("t").Start(ctx, "b")
	b.End()
	root.End()

	sdk := Recorded(t, rec)
	want := "root  pi.outcome=ok\n  a !  error.type=529\n  b\n"
	if got := Canonical(sdk); got != want {
		t.Fatalf("canonical:\n%s\nwant:\n%s", got, want)
	}
	if got := Names(want); got != "root\n  a\n  b\n" {
		t.Errorf("names %q", got)
	}

	// The same spans as an OTLP export, in the order they started.
	var spans []*tracepb.Span
	for _, s := range rec.Started() {
		sc, parent := s.SpanContext(), s.Parent().SpanID()
		tid, sid := sc.TraceID(), sc.SpanID()
		p := &tracepb.Span{
			Name: s.Name(), TraceId: tid[:], SpanId: sid[:],
			StartTimeUnixNano: uint64(s.StartTime().UnixNano()), EndTimeUnixNano: uint64(s.EndTime().UnixNano()),
			Kind: tracepb.Span_SPAN_KIND_INTERNAL,
		}
		if s.Parent().IsValid() {
			p.ParentSpanId = parent[:]
		}
		if s.Status().Code == codes.Error {
			p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: s.Status().Description}
		}
		spans = append(spans, p)
	}
	spans[0].Attributes = []*commonpb.KeyValue{
		{Key: "pi.outcome", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "ok"}}},
		{Key: "n", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 3}}},
		{Key: "f", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: 0.25}}},
		{Key: "s", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{
			Values: []*commonpb.AnyValue{{Value: &commonpb.AnyValue_StringValue{StringValue: "stop"}}}}}}},
	}
	spans[1].Attributes = []*commonpb.KeyValue{{Key: "error.type", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "529"}}}}
	otlp := FromOTLP(t, &coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: spans}},
	}}})
	all := []string{"pi.outcome", "n", "f", "s", "error.type"}
	if got, want := Render(otlp, all...), Render(sdk, all...); got != want {
		t.Errorf("from OTLP:\n%s\nfrom the SDK:\n%s", got, want)
	}
	if len(Leaks(otlp, "boom")) != 1 {
		t.Errorf("leaks %v", Leaks(otlp, "boom"))
	}
}
