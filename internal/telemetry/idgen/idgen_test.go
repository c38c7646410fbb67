package idgen

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func TestReservedIDsGoToTheNextRoot(t *testing.T) {
	g := New()
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(g))
	tr := tp.Tracer("t")

	tid, sid := g.Reserve(trace.SpanContext{})
	ctx, root := tr.Start(context.Background(), "root")
	_, child := tr.Start(ctx, "child")
	_, other := tr.Start(context.Background(), "other root")

	if got := root.SpanContext(); got.TraceID() != tid || got.SpanID() != sid {
		t.Fatalf("root %s/%s, reserved %s/%s", got.TraceID(), got.SpanID(), tid, sid)
	}
	if child.SpanContext().SpanID() == sid {
		t.Fatal("child took the reserved span id")
	}
	if other.SpanContext().TraceID() == tid {
		t.Fatal("a reservation was used twice")
	}
}

func TestReservationUnderRemoteParent(t *testing.T) {
	g := New()
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(g))
	tr := tp.Tracer("t")
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	tid, sid := g.Reserve(parent)
	if tid != parent.TraceID() {
		t.Fatalf("trace id %s, want the parent's", tid)
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	rctx, root := tr.Start(ctx, "root")
	_, child := tr.Start(rctx, "child")
	if root.SpanContext().SpanID() != sid || root.SpanContext().TraceID() != tid {
		t.Fatalf("root %s, want %s", root.SpanContext().SpanID(), sid)
	}
	if child.SpanContext().SpanID() == sid {
		t.Fatal("child took the reservation")
	}
}
