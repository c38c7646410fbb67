package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// chunkGaps hands the span metrics the gaps of two calls, as the mapper
// does for a live stream, and one gap of a call with neither provider nor
// model, one with names that are not names, and a negative one.
func chunkGaps(h *harness) {
	ctx := context.Background()
	for _, g := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 50 * time.Millisecond} {
		h.sm.OutputChunk(ctx, g, "anthropic", "claude-x")
	}
	h.sm.OutputChunk(ctx, 2*time.Second, "", "")
	h.sm.OutputChunk(ctx, time.Second, "has space", strings.Repeat("m", 100))
	h.sm.OutputChunk(ctx, -time.Second, "anthropic", "claude-x")
}

// TestTimePerOutputChunk: each gap is one value of the v1.41 histogram,
// in seconds, under the operation, provider and model, with the unknown
// and the unbounded ones folded into fixed labels, and a negative gap
// left out.
func TestTimePerOutputChunk(t *testing.T) {
	for _, c := range []struct {
		name   string
		metric string
		opts   []metrics.Option
	}{
		{"v1.41", vocab.MetricTimePerChunk, nil},
		{"latest", vocab.MetricInferencePerChunk, []metrics.Option{metrics.WithGenAILatest()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.opts...)
			chunkGaps(h)
			got := h.collect()
			wantEqual(t, c.metric, got.histograms(t, c.metric), map[string]histo{
				"gen_ai.operation.name=chat,gen_ai.provider.name=anthropic,gen_ai.request.model=claude-x": {3, 0.45},
				"gen_ai.operation.name=chat,gen_ai.provider.name=_OTHER,gen_ai.request.model=unknown":     {1, 2},
				"gen_ai.operation.name=chat,gen_ai.provider.name=_OTHER,gen_ai.request.model=_OTHER":      {1, 1},
			})
			m := got[c.metric]
			if m.Unit != "s" {
				t.Errorf("%s unit %q, want s", c.metric, m.Unit)
			}
			if len(got) != 1 {
				t.Errorf("recorded %v, want only %s", got.names(), c.metric)
			}
			// The conventions' bucket advice, as for the time to first chunk.
			d := m.Data.(metricdata.Histogram[float64])
			if b := d.DataPoints[0].Bounds; len(b) != 14 || b[0] != 0.01 || b[13] != 81.92 {
				t.Errorf("bounds %v, want the conventions' 0.01 … 81.92", b)
			}
		})
	}
}

// TestChunkExemplarPointsAtTheCall: the gap keeps the model call's span,
// which the mapper's context holds, as its exemplar.
func TestChunkExemplarPointsAtTheCall(t *testing.T) {
	h := newHarness(t)
	ctx, s := h.tracer.Start(context.Background(), "chat m")
	h.sm.OutputChunk(ctx, 20*time.Millisecond, "openai", "m")
	sc := s.SpanContext()
	s.End()
	d := h.collect()[vocab.MetricTimePerChunk].Data.(metricdata.Histogram[float64])
	var n int
	for _, p := range d.DataPoints {
		for _, e := range p.Exemplars {
			n++
			if tid, sid := sc.TraceID(), sc.SpanID(); string(e.TraceID) != string(tid[:]) || string(e.SpanID) != string(sid[:]) {
				t.Errorf("exemplar %x/%x, want %s/%s", e.TraceID, e.SpanID, tid, sid)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d exemplars, want 1", n)
	}
}
