package jaegertest

import (
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// Forest builds the span trees of traces (internal/testutil/spantree), to
// compare with the golden trees; Jaeger's order (start time, then name)
// breaks ties.
func Forest(tb testing.TB, traces ...*Trace) []*spantree.Node {
	tb.Helper()
	var nodes []*spantree.Node
	for _, tr := range traces {
		for _, s := range tr.Spans {
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
	return spantree.Forest(tb, nodes)
}
