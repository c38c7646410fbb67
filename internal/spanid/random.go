package spanid

import (
	"context"
	"crypto/rand"

	"go.opentelemetry.io/otel/trace"
)

// random is the fallback when none is given: crypto/rand ids.
type random struct{}

func (random) NewIDs(context.Context) (trace.TraceID, trace.SpanID) {
	var t trace.TraceID
	for !t.IsValid() {
		_, _ = rand.Read(t[:])
	}
	return t, newSpanID()
}

func (random) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		_, _ = rand.Read(s[:])
	}
	return s
}
