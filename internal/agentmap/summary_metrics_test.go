package agentmap_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// TestSummaryCallsCountInTokenMetrics: a real capture with two threshold
// compactions gives token metrics that count the summary calls, so that
// the token panels and the cost panels agree: the input tokens recorded
// are those of every assistant message and every compaction result in the
// capture.
func TestSummaryCallsCountInTokenMetrics(t *testing.T) {
	stream := replaytest.Capture(t, v160, "threshold-compaction")
	var want, summaries int64
	for _, line := range strings.Split(string(stream), "\n") {
		var rec struct {
			Type    string `json:"type"`
			Message *struct {
				Role  string         `json:"role"`
				Usage map[string]any `json:"usage"`
			} `json:"message"`
			Result *struct {
				Usage map[string]any `json:"usage"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		input := func(u map[string]any) int64 {
			var n float64
			for _, k := range []string{"input", "cacheRead", "cacheWrite"} {
				v, _ := u[k].(float64)
				n += v
			}
			return int64(n)
		}
		switch {
		case rec.Type == "message_end" && rec.Message != nil && rec.Message.Role == "assistant":
			want += input(rec.Message.Usage)
		case rec.Type == "compaction_end" && rec.Result != nil && rec.Result.Usage != nil:
			want += input(rec.Result.Usage)
			summaries++
		}
	}
	if summaries != 2 {
		t.Fatalf("the capture has %d summary calls, want 2", summaries)
	}

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	sm, err := metrics.NewSpanMetrics(mp)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sm))
	replaytest.Map(agentmap.New(tp), stream, agentmap.Ending{Reason: vocab.EndEOF})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var got int64
	found := false
	for _, s := range rm.ScopeMetrics {
		for _, m := range s.Metrics {
			if m.Name != vocab.MetricTokenUsage {
				continue
			}
			h, _ := m.Data.(metricdata.Histogram[int64])
			for _, p := range h.DataPoints {
				if v, _ := p.Attributes.Value("gen_ai.token.type"); v.AsString() == "input" {
					got += p.Sum
					found = true
				}
			}
		}
	}
	if !found || got != want {
		t.Errorf("input tokens in %s: %d, want %d (every call's, the summaries' too)", vocab.MetricTokenUsage, got, want)
	}
}
