package jaegertest

import (
	"reflect"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// Forest builds the span trees of traces (internal/testutil/spantree), to
// compare with the golden trees; Jaeger's order (start time, then name)
// breaks ties. A span stored twice, the very same, is one span: delivery
// through a Collector is at least once, and a batch retried after a
// timeout reaches Jaeger twice. Copies that differ are all kept, so that
// the comparison shows them.
func Forest(tb testing.TB, traces ...*Trace) []*spantree.Node {
	tb.Helper()
	var nodes []*spantree.Node
	seen := map[[2]string]*Span{}
	copies := 0
	for _, tr := range traces {
		for _, s := range tr.Spans {
			id := [2]string{s.TraceID, s.SpanID}
			if first, ok := seen[id]; ok && sameSpan(first, s) {
				copies++
				continue
			}
			seen[id] = s
			n := &spantree.Node{
				Name: s.Name, TraceID: s.TraceID, SpanID: s.SpanID, ParentID: s.ParentID,
				Kind: s.Kind, Status: s.Status, Start: s.Start, End: s.End,
				Attrs: spantree.Texts(s.Attrs),
			}
			for _, e := range s.Events {
				n.Events = append(n.Events, spantree.Event{Name: e.Name, Time: e.Time, Attrs: spantree.Texts(e.Attrs)})
			}
			nodes = append(nodes, n)
		}
	}
	if copies > 0 {
		tb.Logf("jaegertest: %d spans were stored twice (at-least-once delivery); each counted once", copies)
	}
	return spantree.Forest(tb, nodes)
}

// sameSpan reports whether a and b are one span stored twice.
func sameSpan(a, b *Span) bool {
	return a.Name == b.Name && a.ParentID == b.ParentID && a.Kind == b.Kind && a.Status == b.Status &&
		a.Start.Equal(b.Start) && a.End.Equal(b.End) && reflect.DeepEqual(a.Attrs, b.Attrs) &&
		reflect.DeepEqual(a.Events, b.Events)
}
