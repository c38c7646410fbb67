package agentmap_test

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// mapKeyed maps seq as a session file's run is mapped (ids derived from a
// key) through a provider with sampler s.
func mapKeyed(seq []byte, s sdktrace.Sampler, opts ...agentmap.Option) ([]sdktrace.ReadOnlySpan, agentmap.Stats) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(s),
		sdktrace.WithIDGenerator(spanid.NewGenerator(nil)))
	m := agentmap.New(tp, opts...)
	at := time.Unix(0, 0)
	for i := 0; i+1 < len(seq); i += 2 {
		at = at.Add(time.Millisecond)
		// A key per input: each root is named by the input that opens it.
		m.Handle(agentmap.Input{Event: randomEvent(seq[i], seq[i+1]), At: at, Key: "sess/" + strconv.Itoa(i)})
	}
	m.Close(agentmap.Ending{Reason: vocab.EndEOF}, at.Add(time.Millisecond))
	return rec.Ended(), m.Stats()
}

// checkRootsSampled checks that a sampler that records the roots only (as
// pi-otel report does) gets roots exactly as when every span records:
// what the mapper skips for a span not recorded must not change what the
// run's root says.
func checkRootsSampled(t *testing.T, seq []byte, opts ...agentmap.Option) {
	t.Helper()
	all, allStats := mapKeyed(seq, sdktrace.AlwaysSample(), opts...)
	roots, rootStats := mapKeyed(seq, rootsOnly{}, opts...)
	if !reflect.DeepEqual(allStats, rootStats) {
		t.Fatalf("stats differ: all recorded %+v, roots only %+v", allStats, rootStats)
	}
	want := map[[8]byte]sdktrace.ReadOnlySpan{}
	for _, s := range all {
		if !s.Parent().IsValid() {
			want[s.SpanContext().SpanID()] = s
		}
	}
	if len(roots) != len(want) {
		t.Fatalf("%d roots recorded alone, %d among all spans", len(roots), len(want))
	}
	for _, got := range roots {
		w := want[got.SpanContext().SpanID()]
		if w == nil {
			t.Fatalf("root %s %s not among all spans", got.Name(), got.SpanContext().SpanID())
		}
		if got.Name() != w.Name() || !got.StartTime().Equal(w.StartTime()) || !got.EndTime().Equal(w.EndTime()) ||
			got.Status() != w.Status() || !reflect.DeepEqual(got.Attributes(), w.Attributes()) ||
			!reflect.DeepEqual(got.Events(), w.Events()) || !reflect.DeepEqual(got.Links(), w.Links()) {
			t.Fatalf("root %s differs:\nroots only: %v %v %v\nall spans:  %v %v %v", got.Name(),
				got.Attributes(), got.Events(), got.Status(), w.Attributes(), w.Events(), w.Status())
		}
	}
}
