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
	if got := SpanID("sess-1/e1", "").String(); got != "3c4eb0074d4840f3" {
		t.Errorf("root span id %s", got)
	}
}

func TestPathsNameDistinctSpans(t *testing.T) {
	seen := map[trace.SpanID]string{}
	for _, key := range []string{"a/1", "a/2", "a/1\x00x"} {
		for _, path := range []string{"", "turn/0", "turn/1", "tool/x", "tool/x#1", "x"} {
			id := SpanID(key, path)
			if prev, ok := seen[id]; ok {
				t.Fatalf("%q %q and %s share %s", key, path, prev, id)
			}
			seen[id] = key + " " + path
		}
	}
}

func TestGeneratorDerivesOnlyTheNamedSpan(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(NewGenerator(nil)))
	tr := tp.Tracer("t")
	ctx, root := tr.Start(WithKey(context.Background(), "k/1", ""), "root")
	if root.SpanContext().TraceID() != TraceID("k/1") || root.SpanContext().SpanID() != SpanID("k/1", "") {
		t.Fatalf("root %v", root.SpanContext())
	}
	cctx, child := tr.Start(WithKey(ctx, "k/1", "turn/0"), "turn")
	if want := SpanContext(TraceID("k/1"), "k/1", "turn/0"); child.SpanContext().SpanID() != want.SpanID() {
		t.Fatalf("child %v, want %v", child.SpanContext(), want)
	}
	// Below the child, the child's key is stale: random, not turn/0 again.
	_, grand := tr.Start(cctx, "other")
	if id := grand.SpanContext().SpanID(); id == SpanID("k/1", "turn/0") || id == SpanID("k/1", "") {
		t.Fatalf("grandchild inherited a key: %v", id)
	}
	// Two starts with the same key and path name the same span.
	_, again := tr.Start(WithKey(ctx, "k/1", "turn/0"), "turn")
	if again.SpanContext().SpanID() != child.SpanContext().SpanID() {
		t.Fatal("same key and path, other id")
	}
}

func TestUncountedTravelsDown(t *testing.T) {
	ctx := WithUncounted(context.Background())
	tp := sdktrace.NewTracerProvider()
	ctx, _ = tp.Tracer("t").Start(ctx, "root")
	if !Uncounted(ctx) || Uncounted(context.Background()) {
		t.Fatal("uncounted mark lost or invented")
	}
}

func TestLiveKey(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})
	if got := LiveKey(sc); got != "01000000000000000000000000000000/0200000000000000" {
		t.Fatal(got)
	}
}
