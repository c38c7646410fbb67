package session

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// IDs is an sdktrace.IDGenerator whose ids, after Seed(key), are a pure
// function of key and the order of the spans that follow, so the same file
// traced twice gives the same ids. Without a seed it is random.
//
// A FileMapper seeds it with the session id and the run's first entry id, then
// creates the run's spans in one call, holding run: Tracers that share an
// IDs (a follower of many files) may run in different goroutines. Spans
// that other code starts meanwhile take ids from the sequence and shift it,
// so only session tracers should share a TracerProvider with it.
type IDs struct {
	run sync.Mutex // held by a FileMapper while it creates one run's spans

	mu     sync.Mutex
	seeded bool
	key    string
	n      uint64 // spans generated since the seed
	buf    []byte // hashed for a span id, reused: a long file has millions
}

var _ sdktrace.IDGenerator = (*IDs)(nil)

// Seed makes the ids that follow derive from key (e.g. session id + the
// run's first entry id).
func (g *IDs) Seed(key string) {
	g.mu.Lock()
	g.seeded, g.key, g.n = true, key, 0
	g.mu.Unlock()
}

// unseed returns to random ids.
func (g *IDs) unseed() {
	g.mu.Lock()
	g.seeded, g.key, g.n = false, "", 0
	g.mu.Unlock()
}

// NewIDs is called by the SDK for a span with no parent.
func (g *IDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.seeded {
		return randomTraceID(), randomSpanID()
	}
	s := g.spanID()
	return TraceIDOf(g.key), s
}

// NewSpanID is called by the SDK for a span with a parent.
func (g *IDs) NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.seeded {
		return randomSpanID()
	}
	return g.spanID()
}

// spanID is spanIDOf(g.key, g.n), without allocating; it advances g.n.
// Called with g.mu held.
func (g *IDs) spanID() trace.SpanID {
	g.buf = appendSpanKey(g.buf[:0], g.key, g.n)
	g.n++
	return hashSpanID(g.buf)
}

// TraceIDOf is the trace id a run seeded with key gets (its root has no
// parent): other runs link to it without tracing it again.
func TraceIDOf(key string) trace.TraceID {
	var t trace.TraceID
	h := sha256.Sum256([]byte("pi-otel trace\x00" + key))
	copy(t[:], h[:16])
	if !t.IsValid() {
		t[15] = 1
	}
	return t
}

// RootSpanIDOf is the span id of the root of a run seeded with key.
func RootSpanIDOf(key string) trace.SpanID { return spanIDOf(key, 0) }

func spanIDOf(key string, n uint64) trace.SpanID {
	return hashSpanID(appendSpanKey(nil, key, n))
}

// appendSpanKey appends what the id of span n of a run keyed key hashes.
func appendSpanKey(b []byte, key string, n uint64) []byte {
	b = append(b, "pi-otel span\x00"...)
	b = append(b, key...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint64(b, n)
}

func hashSpanID(b []byte) trace.SpanID {
	h := sha256.Sum256(b)
	var s trace.SpanID
	copy(s[:], h[:8])
	if !s.IsValid() {
		s[7] = 1
	}
	return s
}

func randomTraceID() trace.TraceID {
	var t trace.TraceID
	for !t.IsValid() {
		_, _ = rand.Read(t[:])
	}
	return t
}

func randomSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		_, _ = rand.Read(s[:])
	}
	return s
}
