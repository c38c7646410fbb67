// Package idgen lets pi-otel know a root span's ids before the span exists.
//
// pi-otel puts TRACEPARENT into Pi's environment when it launches Pi, but
// the root span it points at opens later, at agent_start. Reserving the ids
// up front, and handing them to the next root the SDK creates, makes a
// pi-otel (or any W3C-aware tool) started by Pi's bash tool land inside the
// very trace that is about to be written.
package idgen

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Reserving is an sdktrace.IDGenerator with one reservable slot.
type Reserving struct {
	mu       sync.Mutex
	rng      *rand.Rand
	reserved bool
	traceID  trace.TraceID
	spanID   trace.SpanID
}

var _ sdktrace.IDGenerator = (*Reserving)(nil)

// New returns a generator seeded from crypto/rand.
func New() *Reserving {
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	return &Reserving{rng: rand.New(rand.NewChaCha8(seed))}
}

// Reserve picks the ids the next root span will get. A root is a span
// with no local parent: under a remote parent (the caller's TRACEPARENT) it
// keeps parent's trace id, which the caller passes here.
func (g *Reserving) Reserve(parent trace.SpanContext) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.traceID = parent.TraceID()
	if !parent.IsValid() {
		g.traceID = g.newTraceID()
	}
	g.spanID = g.newSpanID()
	g.reserved = true
	return g.traceID, g.spanID
}

// NewIDs is called by the SDK for a span with no parent at all.
func (g *Reserving) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.reserved {
		g.reserved = false
		return g.traceID, g.spanID
	}
	return g.newTraceID(), g.newSpanID()
}

// NewSpanID is called for a span with a parent; a remote parent makes it a
// root of ours, which takes the reservation if its trace id matches.
func (g *Reserving) NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	parent := trace.SpanContextFromContext(ctx)
	if g.reserved && parent.IsRemote() && traceID == g.traceID {
		g.reserved = false
		return g.spanID
	}
	return g.newSpanID()
}

func (g *Reserving) newTraceID() trace.TraceID {
	var t trace.TraceID
	for !t.IsValid() {
		binary.BigEndian.PutUint64(t[:8], g.rng.Uint64())
		binary.BigEndian.PutUint64(t[8:], g.rng.Uint64())
	}
	return t
}

func (g *Reserving) newSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		binary.BigEndian.PutUint64(s[:], g.rng.Uint64())
	}
	return s
}
