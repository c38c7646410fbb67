package session

import (
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/spanid"
)

// The links noted are bounded, the first noted forgotten first, and what
// a process kept (Links) serves another (Restore) without a read.
func TestParentToolsKeepTheNewestLinks(t *testing.T) {
	tool := func(i int) trace.SpanContext {
		k := "s1/" + strconv.Itoa(i)
		return spanid.SpanContext(spanid.TraceID(k), k, spanid.Path{Kind: "tool", ID: "c1"})
	}
	p := NewParentTools(1 << 20)
	for i := range maxNotedChildren + 2 {
		p.note("child-"+strconv.Itoa(i), tool(i))
	}
	if _, ok := p.noted["child-1"]; ok {
		t.Error("the second child noted is still kept past the bound")
	}
	if sc := p.noted["child-2"]; !sc.Equal(tool(2)) {
		t.Errorf("child-2 links to %v, want %v", sc, tool(2))
	}
	at := p.Changes()
	p.note("child-2", tool(2)) // the same link again changes nothing
	links, changes := p.Links(3)
	if changes != at || len(links) != 3 || links[2].Child != "child-"+strconv.Itoa(maxNotedChildren+1) {
		t.Fatalf("Links(3) = %v at %d, want the newest three at %d", links, changes, at)
	}

	q := NewParentTools(1 << 20)
	q.Restore(links)
	for _, l := range links {
		if sc, ok := q.Find("/nowhere.jsonl", l.Child); !ok || !sc.Equal(l.Tool) {
			t.Errorf("restored %s links to %v, want %v", l.Child, sc, l.Tool)
		}
	}
	if n := q.Reads(); n != 0 {
		t.Errorf("%d reads for children restored", n)
	}
}
