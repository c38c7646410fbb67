package session

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// node is one recorded span and its children.
type node struct {
	s        sdktrace.ReadOnlySpan
	children []*node
	seq      int
}

func (n *node) name() string { return n.s.Name() }

func (n *node) attr(key string) (attribute.Value, bool) {
	for _, kv := range n.s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func (n *node) str(key string) string {
	v, ok := n.attr(key)
	if !ok {
		return "<none>"
	}
	return v.String()
}

func (n *node) find(name string) []*node {
	var out []*node
	if n.name() == name || strings.HasPrefix(n.name(), name+" ") {
		out = append(out, n)
	}
	for _, c := range n.children {
		out = append(out, c.find(name)...)
	}
	return out
}

// hasEvent reports whether the node's span carries an event of that name.
func (n *node) hasEvent(name string) bool {
	for _, e := range n.s.Events() {
		if e.Name == name {
			return true
		}
	}
	return false
}

// shape renders the tree as indented names, "!" marking error status.
func (n *node) shape() string {
	var b strings.Builder
	var walk func(*node, int)
	walk = func(n *node, depth int) {
		mark := ""
		if n.s.Status().Code == codes.Error {
			mark = " !"
		}
		fmt.Fprintf(&b, "%s%s%s\n", strings.Repeat("  ", depth), n.name(), mark)
		for _, c := range n.children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

func forest(t *testing.T, rec *tracetest.SpanRecorder) []*node {
	t.Helper()
	for _, s := range rec.Started() {
		if s.EndTime().IsZero() {
			t.Errorf("span %s never ended", s.Name())
		}
	}
	seq := map[string]int{}
	for i, s := range rec.Started() {
		seq[s.SpanContext().SpanID().String()] = i
	}
	byID := map[string]*node{}
	for _, s := range rec.Ended() {
		id := s.SpanContext().SpanID().String()
		byID[id] = &node{s: s, seq: seq[id]}
	}
	var out []*node
	for _, n := range byID {
		p := n.s.Parent()
		if parent, ok := byID[p.SpanID().String()]; ok && p.IsValid() {
			if p.TraceID() != n.s.SpanContext().TraceID() {
				t.Fatalf("%s: parent in another trace", n.name())
			}
			parent.children = append(parent.children, n)
		} else {
			out = append(out, n)
		}
		if n.s.EndTime().Before(n.s.StartTime()) {
			t.Errorf("%s ends before it starts", n.name())
		}
	}
	var sortAll func([]*node)
	sortAll = func(ns []*node) {
		sort.SliceStable(ns, func(i, j int) bool {
			a, b := ns[i].s, ns[j].s
			if !a.StartTime().Equal(b.StartTime()) {
				return a.StartTime().Before(b.StartTime())
			}
			return ns[i].seq < ns[j].seq
		})
		for _, n := range ns {
			sortAll(n.children)
		}
	}
	sortAll(out)
	return out
}
