// Package spantree is the span-tree helper every trace test shares: it
// builds span trees from what a test has at hand (an SDK span recorder, an
// OTLP export or trace file; jaegertest.Forest does it for Jaeger's stored
// traces), renders them in one canonical text form and compares that form
// with golden files.
//
// The golden trees sit next to what they are derived from:
// testdata/captures/pi-*/NAME.tree for the captured Pi streams and
// internal/rpc/testdata/transcripts/NAME.tree for the RPC transcripts. The
// mapper and RPC tests write them with -update; the end-to-end suites only
// read them, so a live run is held to the tree its capture gives.
package spantree

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Node is one span with its children, in a form that does not depend on
// where the span was read from.
type Node struct {
	Name                      string
	TraceID, SpanID, ParentID string // lower-case hex; ParentID "" for none
	Kind                      string // "internal", "server", "client", "producer", "consumer", "unspecified"
	Status                    Status
	Start, End                time.Time
	Attrs                     map[string]string // every attribute, its value as Text renders it
	Events                    []Event
	Links                     []Link
	Parent                    *Node // nil for a root
	Children                  []*Node
}

// Status is a span's status.
type Status struct {
	Code    string // "unset", "ok", "error"
	Message string
}

// Event is a span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs map[string]string
}

// Link is a span link.
type Link struct{ TraceID, SpanID string }

// Failed reports whether the span's status is error.
func (n *Node) Failed() bool { return n.Status.Code == "error" }

// Attr is the attribute's text and whether it is set.
func (n *Node) Attr(key string) (string, bool) {
	v, ok := n.Attrs[key]
	return v, ok
}

// Str is the attribute's text, "<none>" when it is not set: a value no
// attribute has, so comparing with a wanted value fails on a missing one.
func (n *Node) Str(key string) string {
	if v, ok := n.Attrs[key]; ok {
		return v
	}
	return "<none>"
}

// Must is the attribute's text; a missing attribute fails the test.
func (n *Node) Must(tb testing.TB, key string) string {
	tb.Helper()
	v, ok := n.Attrs[key]
	if !ok {
		tb.Fatalf("%s: no attribute %s", n.Name, key)
	}
	return v
}

// WantAttrs checks attributes by their text.
func (n *Node) WantAttrs(tb testing.TB, want map[string]string) {
	tb.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got := n.Str(k); got != want[k] {
			tb.Errorf("%s: %s = %q, want %q", n.Name, k, got, want[k])
		}
	}
}

// EventsNamed returns the span's events called name.
func (n *Node) EventsNamed(name string) []Event {
	var out []Event
	for _, e := range n.Events {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// Str is the event attribute's text, "<none>" when it is not set.
func (e Event) Str(key string) string {
	if v, ok := e.Attrs[key]; ok {
		return v
	}
	return "<none>"
}

// Walk calls fn for n and every descendant, parents first.
func (n *Node) Walk(fn func(*Node)) {
	fn(n)
	for _, c := range n.Children {
		c.Walk(fn)
	}
}

// Find returns n and its descendants called name, in tree order.
func (n *Node) Find(name string) []*Node { return Find([]*Node{n}, name) }

// Find returns the spans of the forest called name, in tree order.
func Find(forest []*Node, name string) []*Node {
	var out []*Node
	for _, n := range All(forest) {
		if n.Name == name {
			out = append(out, n)
		}
	}
	return out
}

// All flattens a forest in tree order.
func All(forest []*Node) []*Node {
	var out []*Node
	for _, r := range forest {
		r.Walk(func(n *Node) { out = append(out, n) })
	}
	return out
}

// One returns the only tree of the forest, failing the test otherwise.
func One(tb testing.TB, forest []*Node) *Node {
	tb.Helper()
	if len(forest) != 1 {
		tb.Fatalf("want one trace, got %d:\n%s", len(forest), Shape(forest))
	}
	return forest[0]
}

// ByAttr returns the one span called name whose attribute key is value.
func ByAttr(tb testing.TB, forest []*Node, name, key, value string) *Node {
	tb.Helper()
	var hit []*Node
	for _, n := range Find(forest, name) {
		if n.Str(key) == value {
			hit = append(hit, n)
		}
	}
	if len(hit) != 1 {
		tb.Fatalf("%d spans %q with %s=%s, want 1", len(hit), name, key, value)
	}
	return hit[0]
}

// Forest joins nodes into a forest. A node whose parent is among them
// becomes its child; the others are roots. Siblings and roots are ordered
// by start time, ties kept in the order of nodes, so callers pass them in
// the order they began. It fails tb on what no exporter should produce: a
// parent in another trace, a span that ends before it starts.
func Forest(tb testing.TB, nodes []*Node) []*Node {
	tb.Helper()
	byID := make(map[string]*Node, len(nodes))
	for _, n := range nodes {
		byID[n.TraceID+"/"+n.SpanID] = n
	}
	bySpan := make(map[string]*Node, len(nodes))
	for _, n := range nodes {
		bySpan[n.SpanID] = n
	}
	var roots []*Node
	for _, n := range nodes {
		if n.End.Before(n.Start) {
			tb.Errorf("%s ends before it starts", n.Name)
		}
		p := byID[n.TraceID+"/"+n.ParentID]
		if p == nil && n.ParentID != "" && bySpan[n.ParentID] != nil {
			tb.Fatalf("%s: parent in another trace", n.Name)
		}
		if p == nil || n.ParentID == "" {
			roots = append(roots, n)
			continue
		}
		n.Parent = p
		p.Children = append(p.Children, n)
	}
	var order func([]*Node)
	order = func(ns []*Node) {
		sort.SliceStable(ns, func(i, j int) bool { return ns[i].Start.Before(ns[j].Start) })
		for _, n := range ns {
			order(n.Children)
		}
	}
	order(roots)
	return roots
}

// Keys are the attributes the canonical form shows: the ones that say how
// a run went and that a live run and a replay of its capture agree on.
// Ids, times, token counts and costs differ from run to run and stay out.
var Keys = []string{
	string(semconv.ErrorTypeKey),
	string(vocab.CompactionReasonKey),
	string(vocab.EndReasonKey),
	string(vocab.OutcomeKey),
	string(vocab.RetryOutcomeKey),
	string(vocab.RPCDispositionKey),
	string(vocab.RPCIDKey),
	string(vocab.UIOutcomeKey),
	string(vocab.UnfinishedKey),
}

// Canonical renders a forest the way the golden files hold it: Render
// with Keys.
func Canonical(forest []*Node) string { return Render(forest, Keys...) }

// Shape renders a forest as names and nesting alone.
func Shape(forest []*Node) string { return Render(forest) }

// Render writes each tree as one line a span, indented two spaces a
// level, children in start order: the name, " !" when the status is error,
// then the keys the span has, sorted, as "  key=value …". Trees are
// separated by "---".
func Render(forest []*Node, keys ...string) string {
	keys = append([]string(nil), keys...)
	sort.Strings(keys)
	var b strings.Builder
	for i, r := range forest {
		if i > 0 {
			b.WriteString("---\n")
		}
		var walk func(*Node, int)
		walk = func(n *Node, depth int) {
			b.WriteString(strings.Repeat("  ", depth))
			b.WriteString(n.Name)
			if n.Failed() {
				b.WriteString(" !")
			}
			sep := "  "
			for _, k := range keys {
				if v, ok := n.Attrs[k]; ok {
					fmt.Fprintf(&b, "%s%s=%s", sep, k, v)
					sep = " "
				}
			}
			b.WriteByte('\n')
			for _, c := range n.Children {
				walk(c, depth+1)
			}
		}
		walk(r, 0)
	}
	return b.String()
}

// Names strips a rendered tree down to names and nesting: no status
// marks, no attributes. Outputs that show only names (the console tree)
// compare with this.
func Names(tree string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(tree, "\n") {
		if line == "" {
			continue
		}
		body := strings.TrimRight(line, "\n")
		if i := strings.Index(strings.TrimLeft(body, " "), "  "); i >= 0 {
			body = body[:len(body)-len(strings.TrimLeft(body, " "))+i]
		}
		body = strings.TrimSuffix(body, " !")
		b.WriteString(body)
		b.WriteByte('\n')
	}
	return b.String()
}

// String is the tree below n in canonical form, for failure messages.
func (n *Node) String() string { return Canonical([]*Node{n}) }

// Leaks lists where text occurs in the trees: attribute values, event
// attribute values and status messages. Privacy tests want it empty.
func Leaks(forest []*Node, text string) []string {
	var out []string
	for _, n := range All(forest) {
		for k, v := range n.Attrs {
			if strings.Contains(v, text) {
				out = append(out, n.Name+" attribute "+k)
			}
		}
		for _, e := range n.Events {
			for k, v := range e.Attrs {
				if strings.Contains(v, text) {
					out = append(out, n.Name+" event "+e.Name+" "+k)
				}
			}
		}
		if strings.Contains(n.Status.Message, text) {
			out = append(out, n.Name+" status")
		}
	}
	sort.Strings(out)
	return out
}
