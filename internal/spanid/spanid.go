// Package spanid derives trace and span ids from keys, so that any process
// that knows a span's keys can name it: a run traced twice (watch, then
// replay; or again after a failed export) keeps its ids, a child session
// links to the tool span that ran it without tracing the parent again, and
// a tool's span context is known before its span starts.
//
// A run's key names the run (a session file's: the session id and the id
// of the run's first entry). A path names a span by its place in the run
// ("turn/2", "tool/call_1"); the empty path is the run's root. The key and
// path travel in the context of the span being started (WithKey), where
// Generator, the TracerProvider's IDGenerator, reads them. Nothing is
// shared between spans: creation needs no lock.
package spanid

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// TraceID is the trace id of a run keyed key whose root has no parent.
func TraceID(key string) trace.TraceID {
	var buf [128]byte
	b := append(append(buf[:0], "pi-otel trace\x00"...), key...)
	h := sha256.Sum256(b)
	var t trace.TraceID
	copy(t[:], h[:16])
	if !t.IsValid() {
		t[15] = 1
	}
	return t
}

// SpanID is the span id of the span at path in the run keyed key. The
// root's (path "") is what the ids before this package gave a run's first
// span, so roots keep their ids; other paths hash apart from it (a 0x01
// byte where the root has the first byte of a zero counter).
func SpanID(key, path string) trace.SpanID {
	var buf [192]byte
	b := append(append(buf[:0], "pi-otel span\x00"...), key...)
	if path == "" {
		b = binary.BigEndian.AppendUint64(append(b, 0), 0)
	} else {
		b = append(append(append(b, 0, 1), path...), 0)
	}
	h := sha256.Sum256(b)
	var s trace.SpanID
	copy(s[:], h[:8])
	if !s.IsValid() {
		s[7] = 1
	}
	return s
}

// SpanContext is the sampled span context of the span at path in the run
// keyed key, in trace t.
func SpanContext(t trace.TraceID, key, path string) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: t, SpanID: SpanID(key, path), TraceFlags: trace.FlagsSampled,
	})
}

// LiveKey is the key of a run with no key of its own (a live stream): its
// root's ids, random, after which its other spans derive from it.
func LiveKey(root trace.SpanContext) string {
	var b [49]byte
	t, s := root.TraceID(), root.SpanID()
	hex.Encode(b[:32], t[:])
	b[32] = '/'
	hex.Encode(b[33:], s[:])
	return string(b[:])
}

type keyCtx struct{}

// named is what WithKey puts in a context: the key and path of the span
// started under it, and the span it was given for (its parent).
type named struct {
	key, path string
	parent    trace.SpanContext
}

// WithKey returns ctx naming the next span started under it: path in the
// run keyed key. It holds only for a span started directly under ctx's
// current span: a span started further down (under the new span's own
// context, which inherits the value) is not named by it.
func WithKey(ctx context.Context, key, path string) context.Context {
	return context.WithValue(ctx, keyCtx{}, &named{key: key, path: path, parent: trace.SpanContextFromContext(ctx)})
}

// keyOf returns the key and path ctx names for a span started under it.
func keyOf(ctx context.Context) (*named, bool) {
	n, ok := ctx.Value(keyCtx{}).(*named)
	if !ok {
		return nil, false
	}
	p := trace.SpanContextFromContext(ctx)
	return n, p.SpanID() == n.parent.SpanID() && p.TraceID() == n.parent.TraceID()
}

// Generator is an sdktrace.IDGenerator: a span whose context names it
// (WithKey) gets derived ids; any other gets the fallback's.
type Generator struct {
	fallback sdktrace.IDGenerator
}

var _ sdktrace.IDGenerator = (*Generator)(nil)

// NewGenerator returns a Generator; a nil fallback gives random ids.
func NewGenerator(fallback sdktrace.IDGenerator) *Generator {
	if fallback == nil {
		fallback = random{}
	}
	return &Generator{fallback: fallback}
}

// NewIDs is called by the SDK for a span with no parent.
func (g *Generator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if n, ok := keyOf(ctx); ok {
		return TraceID(n.key), SpanID(n.key, n.path)
	}
	return g.fallback.NewIDs(ctx)
}

// NewSpanID is called by the SDK for a span with a parent.
func (g *Generator) NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID {
	if n, ok := keyOf(ctx); ok {
		return SpanID(n.key, n.path)
	}
	return g.fallback.NewSpanID(ctx, traceID)
}
