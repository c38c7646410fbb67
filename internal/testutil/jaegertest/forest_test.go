package jaegertest

import (
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// A span Jaeger stored twice, the same, is one node; a copy that differs
// stays, for the comparison to show.
func TestForestCountsASpanStoredTwiceOnce(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	root := &Span{TraceID: "t1", SpanID: "a", Name: "invoke_agent pi", Start: t0, End: t0.Add(time.Second), Attrs: map[string]any{"k": "v"}}
	child := &Span{TraceID: "t1", SpanID: "b", ParentID: "a", Name: "chat m", Start: t0, End: t0.Add(time.Millisecond)}
	again := *child
	got := Forest(t, &Trace{ID: "t1", Spans: []*Span{root, child, &again}})
	if c := spantree.Canonical(got); c != spantree.Canonical(Forest(t, &Trace{ID: "t1", Spans: []*Span{root, child}})) {
		t.Errorf("a span stored twice changed the tree:\n%s", c)
	}
	other := *child
	other.Name = "chat other"
	changed := Forest(t, &Trace{ID: "t1", Spans: []*Span{root, child, &other}})
	if n := countNodes(changed); n != 3 {
		t.Errorf("a differing copy was dropped: %d nodes, want 3", n)
	}
}

func countNodes(ns []*spantree.Node) int {
	n := 0
	for _, x := range ns {
		n += 1 + countNodes(x.Children)
	}
	return n
}
