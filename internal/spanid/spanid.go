// Package spanid derives trace and span ids from keys, so that any process
// that knows a span's keys can name it: a run traced twice (watch, then
// replay; or again after a failed export) keeps its ids, a child session
// links to the tool span that ran it without tracing the parent again, and
// a tool's span context is known before its span starts.
//
// A run's key names the run (a session file's: the session id and the id
// of the run's first entry). A Path names a span by its place in the run
// ("turn/2", "tool/call_1"); the zero Path is the run's root. The key and
// path travel in the context of the span being started (WithKey), where
// Generator, the TracerProvider's IDGenerator, reads them. Nothing is
// shared between spans: creation needs no lock.
package spanid

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"

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

// Path names a span by its place in its run: Kind and then ID or N
// ("turn/2", "tool/call_1", "tool/call_1#1" for a call id given a second
// time; an ID is written so that no other path reads alike, see
// appendID), below Base, the path of the span it sits under when that is not
// the run's top ("tool/call_1/agent/0/chat/3"). The zero Path is the root.
// A struct, not a string, so that naming a span allocates nothing.
type Path struct {
	Base, Kind, ID string
	N              int
}

// IsRoot reports whether p is the root's path.
func (p Path) IsRoot() bool { return p == Path{} }

// String is p as docs/sessions.md writes it; its bytes are what SpanID
// hashes.
func (p Path) String() string { return string(p.append(nil)) }

func (p Path) append(b []byte) []byte {
	if p.Base != "" {
		b = append(append(b, p.Base...), '/')
	}
	b = append(append(b, p.Kind...), '/')
	if p.ID == "" {
		return strconv.AppendInt(b, int64(p.N), 10)
	}
	b = appendID(b, p.ID)
	if p.N > 0 {
		b = strconv.AppendInt(append(b, '#'), int64(p.N), 10)
	}
	return b
}

// appendID appends id so that no two paths read alike whatever ids they
// hold: '%', '#' and '/' percent-encoded (a call id "x#1" is not the
// second span of "x", nor "c/agent/0" a span below call "c"), and the
// first digit of an id of digits only (id "0" is not the N form "0" of
// an empty id). Any other id is written as it is, so its span keeps the
// id it always had.
func appendID(b []byte, id string) []byte {
	digits := !strings.ContainsFunc(id, func(c rune) bool { return c < '0' || c > '9' })
	if !digits && !strings.ContainsAny(id, "%#/") {
		return append(b, id...)
	}
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c == '%' || c == '#' || c == '/' || digits && i == 0 {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
			continue
		}
		b = append(b, c)
	}
	return b
}

// SpanID is the span id of the span at path in the run keyed key. The
// root's is what the ids before this package gave a run's first span, so
// roots keep their ids; other paths hash apart from it (a 0x01 byte where
// the root has the first byte of a zero counter).
func SpanID(key string, path Path) trace.SpanID {
	var buf [192]byte
	b := append(append(buf[:0], "pi-otel span\x00"...), key...)
	if path.IsRoot() {
		b = binary.BigEndian.AppendUint64(append(b, 0), 0)
	} else {
		b = append(path.append(append(b, 0, 1)), 0)
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
func SpanContext(t trace.TraceID, key string, path Path) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: t, SpanID: SpanID(key, path), TraceFlags: trace.FlagsSampled,
	})
}

// NewLiveKey returns a random key for a run with no key of its own (a
// live stream's): its ids derive from it as a session run's from its key.
func NewLiveKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "live/" + hex.EncodeToString(b[:])
}

type keyCtx struct{}

// Named is the context WithKey returns: the key and path of the span
// started under it, and the span it was given for (its parent). One
// allocation, not context.WithValue's two: a history has millions; none
// when its caller keeps it in memory of its own (Named.Name).
type Named struct {
	context.Context
	key    string
	path   Path
	parent trace.SpanContext
}

func (n *Named) Value(k any) any {
	if k == (keyCtx{}) {
		return n
	}
	return n.Context.Value(k)
}

// WithKey returns ctx naming the next span started under it: path in the
// run keyed key. It holds only for a span started directly under ctx's
// current span: a span started further down (under the new span's own
// context, which inherits the value) is not named by it.
func WithKey(ctx context.Context, key string, path Path) context.Context {
	return new(Named).Name(ctx, key, path)
}

// Name is WithKey in n, which it returns: n must outlive the span started
// under it (the span's context holds it), and name no other.
func (n *Named) Name(ctx context.Context, key string, path Path) context.Context {
	*n = Named{Context: ctx, key: key, path: path, parent: trace.SpanContextFromContext(ctx)}
	return n
}

// keyOf returns the key and path ctx names for a span started under it.
func keyOf(ctx context.Context) (*Named, bool) {
	n, ok := ctx.Value(keyCtx{}).(*Named)
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
	return &Generator{fallback: cmp.Or[sdktrace.IDGenerator](fallback, random{})}
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
