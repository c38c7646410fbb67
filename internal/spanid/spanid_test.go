package spanid

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The ids before this package gave a run's trace and root these ids, and
// dashboards and dedup depend on them: they must not change.
func TestRootIDsKeepTheirValues(t *testing.T) {
	if got := TraceID("sess-1/e1").String(); got != "bf026e7493e59845b6001a049194501d" {
		t.Errorf("trace id %s", got)
	}
	if got := SpanID("sess-1/e1", Path{}).String(); got != "3c4eb0074d4840f3" {
		t.Errorf("root span id %s", got)
	}
}

func TestPathsNameDistinctSpans(t *testing.T) {
	seen := map[trace.SpanID]string{}
	paths := []Path{{}, {Kind: "turn"}, {Kind: "turn", N: 1}, {Kind: "tool", ID: "x"}, {Kind: "tool", ID: "x", N: 1},
		{Base: "tool/x", Kind: "agent"}, {Base: "tool/x/agent/0", Kind: "chat", N: 2}}
	for _, key := range []string{"a/1", "a/2", "a/1\x00x"} {
		for _, path := range paths {
			id := SpanID(key, path)
			if prev, ok := seen[id]; ok {
				t.Fatalf("%q %q and %s share %s", key, path, prev, id)
			}
			seen[id] = key + " " + path.String()
		}
	}
}

// Call ids are whatever Pi gives: "x" twice and then "x#1", an id that
// reads as a path below another, an id of digits beside an empty one;
// each span still gets its own id.
func TestAnyCallIDsNameDistinctSpans(t *testing.T) {
	paths := []Path{
		{Kind: "tool", ID: "x"}, {Kind: "tool", ID: "x", N: 1}, {Kind: "tool", ID: "x#1"}, {Kind: "tool", ID: "x#1", N: 1},
		{Kind: "tool", ID: "x%231"}, {Kind: "tool", ID: "%"}, {Kind: "tool", ID: "%25"},
		{Kind: "tool", ID: "c/agent/0"}, {Base: "tool/c", Kind: "agent"},
		{Kind: "tool"}, {Kind: "tool", N: 1}, {Kind: "tool", ID: "0"}, {Kind: "tool", ID: "1"}, {Kind: "tool", ID: "%30"},
	}
	seen := map[string]Path{}
	for _, p := range paths {
		if prev, ok := seen[p.String()]; ok {
			t.Errorf("%#v and %#v both read %q", p, prev, p.String())
		}
		seen[p.String()] = p
	}
}

// An id that needs no escaping keeps the span id it always had.
func TestPlainCallIDsKeepTheirSpanIDs(t *testing.T) {
	if got := SpanID("sess-1/e1", Path{Kind: "tool", ID: "call_1", N: 1}).String(); got != "ea6a30629ad60220" {
		t.Errorf("span id %s", got)
	}
}

func TestPathString(t *testing.T) {
	for p, want := range map[Path]string{
		{Kind: "turn", N: 2}:                   "turn/2",
		{Kind: "tool", ID: "c1"}:               "tool/c1",
		{Kind: "tool", ID: "c1", N: 1}:         "tool/c1#1",
		{Base: "tool/c1", Kind: "agent", N: 0}: "tool/c1/agent/0",
		{Kind: "bash", ID: "e7"}:               "bash/e7",
		{Kind: "tool", ID: "x#1"}:              "tool/x%231",
		{Kind: "tool", ID: "c/agent/0", N: 2}:  "tool/c%2Fagent%2F0#2",
		{Kind: "tool", ID: "100%"}:             "tool/100%25",
		{Kind: "tool", ID: "7"}:                "tool/%37",
	} {
		if got := p.String(); got != want {
			t.Errorf("%+v: %q, want %q", p, got, want)
		}
	}
}

func TestGeneratorDerivesOnlyTheNamedSpan(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(NewGenerator(nil)))
	tr := tp.Tracer("t")
	ctx, root := tr.Start(WithKey(context.Background(), "k/1", Path{}), "root")
	if root.SpanContext().TraceID() != TraceID("k/1") || root.SpanContext().SpanID() != SpanID("k/1", Path{}) {
		t.Fatalf("root %v", root.SpanContext())
	}
	cctx, child := tr.Start(WithKey(ctx, "k/1", Path{Kind: "turn"}), "turn")
	if want := SpanContext(TraceID("k/1"), "k/1", Path{Kind: "turn"}); child.SpanContext().SpanID() != want.SpanID() {
		t.Fatalf("child %v, want %v", child.SpanContext(), want)
	}
	// Below the child, the child's key is stale: random, not turn/0 again.
	_, grand := tr.Start(cctx, "other")
	if id := grand.SpanContext().SpanID(); id == SpanID("k/1", Path{Kind: "turn"}) || id == SpanID("k/1", Path{}) {
		t.Fatalf("grandchild inherited a key: %v", id)
	}
	// Two starts with the same key and path name the same span.
	_, again := tr.Start(WithKey(ctx, "k/1", Path{Kind: "turn"}), "turn")
	if again.SpanContext().SpanID() != child.SpanContext().SpanID() {
		t.Fatal("same key and path, other id")
	}
}

func TestNewLiveKey(t *testing.T) {
	a, b := NewLiveKey(), NewLiveKey()
	if a == b || len(a) != len("live/")+32 {
		t.Fatalf("live keys %q and %q: want two random ones", a, b)
	}
}
