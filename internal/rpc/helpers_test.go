package rpc_test

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/internal/rpc/rpctest"
	"github.com/pi-otel/pi-otel/mapper"
)

// harness is a Tracker writing to an in-memory recorder.
type harness struct {
	t   *testing.T
	rec *tracetest.SpanRecorder
	tp  *sdktrace.TracerProvider
	m   *mapper.Mapper
	tr  *rpc.Tracker
	at  time.Time
}

func newHarness(t *testing.T, opts ...rpc.Option) *harness {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	m := mapper.New(tp)
	return &harness{t: t, rec: rec, tp: tp, m: m, tr: rpc.New(m, tp, opts...),
		at: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
}

// in and out feed one synthetic line 1 ms after the previous one.
func (h *harness) in(line string) {
	h.at = h.at.Add(time.Millisecond)
	h.tr.FromController([]byte(line), h.at)
}

func (h *harness) out(line string) {
	h.at = h.at.Add(time.Millisecond)
	h.tr.FromPi([]byte(line), h.at)
}

// wait moves the clock on without a record.
func (h *harness) wait(d time.Duration) { h.at = h.at.Add(d) }

// play feeds a recorded transcript the way the proxy would: one CR before
// the LF is stripped, as framing does.
func (h *harness) play(lines []rpctest.Line) {
	for _, l := range lines {
		raw := bytes.TrimSuffix(l.Raw, []byte{'\r'})
		if l.At.After(h.at) {
			h.at = l.At
		}
		if l.Dir == rpctest.In {
			h.tr.FromController(raw, l.At)
		} else {
			h.tr.FromPi(raw, l.At)
		}
	}
}

// close ends the session as if Pi exited with end.
func (h *harness) close(end mapper.Ending) []*node {
	h.at = h.at.Add(time.Millisecond)
	h.tr.Close(end, h.at)
	return forest(h.rec.Ended())
}

var exit0 = mapper.Ending{Reason: mapper.EndExit}

// node is one recorded span with its children.
type node struct {
	s        sdktrace.ReadOnlySpan
	children []*node
}

func forest(spans []sdktrace.ReadOnlySpan) []*node {
	byID := map[trace.SpanID]*node{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = &node{s: s}
	}
	var roots []*node
	for _, s := range spans {
		n := byID[s.SpanContext().SpanID()]
		if p, ok := byID[s.Parent().SpanID()]; ok && s.Parent().IsValid() {
			p.children = append(p.children, n)
		} else {
			roots = append(roots, n)
		}
	}
	var order func([]*node)
	order = func(ns []*node) {
		sort.SliceStable(ns, func(i, j int) bool { return ns[i].s.StartTime().Before(ns[j].s.StartTime()) })
		for _, n := range ns {
			order(n.children)
		}
	}
	order(roots)
	return roots
}

func (n *node) name() string { return n.s.Name() }

// shape renders the tree as indented names; chat, tool and message detail
// below a turn is left out unless deep is set.
func (n *node) shape() string {
	var b strings.Builder
	var walk func(*node, int)
	walk = func(n *node, depth int) {
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), n.name())
		for _, c := range n.children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

func shapes(f []*node) string {
	var parts []string
	for _, n := range f {
		parts = append(parts, n.shape())
	}
	return strings.Join(parts, "---\n")
}

func wantShapes(t *testing.T, f []*node, want string) {
	t.Helper()
	want = strings.TrimLeft(want, "\n")
	if got := shapes(f); got != want {
		t.Fatalf("traces:\n%s\nwant:\n%s", got, want)
	}
}

func (n *node) attr(key string) (attribute.Value, bool) {
	for _, kv := range n.s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// str is the attribute's value as text, "<none>" when absent.
func (n *node) str(key string) string {
	if v, ok := n.attr(key); ok {
		return v.Emit()
	}
	return "<none>"
}

// find returns the descendants (n included) with the given name.
func (n *node) find(name string) []*node {
	var out []*node
	if n.name() == name {
		out = append(out, n)
	}
	for _, c := range n.children {
		out = append(out, c.find(name)...)
	}
	return out
}

func findAll(f []*node, name string) []*node {
	var out []*node
	for _, n := range f {
		out = append(out, n.find(name)...)
	}
	return out
}

// byAttr returns the one span called name whose key attribute is value.
func byAttr(t *testing.T, f []*node, name, key, value string) *node {
	t.Helper()
	var hit []*node
	for _, n := range findAll(f, name) {
		if n.str(key) == value {
			hit = append(hit, n)
		}
	}
	if len(hit) != 1 {
		t.Fatalf("%d spans %q with %s=%s, want 1", len(hit), name, key, value)
	}
	return hit[0]
}

// events returns n's events called name.
func (n *node) events(name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range n.s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func eventAttr(e sdktrace.Event, key string) string {
	for _, kv := range e.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return "<none>"
}

// wantAttrs checks attributes of n.
func wantAttrs(t *testing.T, n *node, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := n.str(k); got != v {
			t.Errorf("%s: %s = %q, want %q", n.name(), k, got, v)
		}
	}
}

// allSpans flattens a forest.
func allSpans(f []*node) []*node {
	var out []*node
	var walk func(*node)
	walk = func(n *node) {
		out = append(out, n)
		for _, c := range n.children {
			walk(c)
		}
	}
	for _, n := range f {
		walk(n)
	}
	return out
}
