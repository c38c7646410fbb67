package telemetry

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// consoleMetrics writes each collection compactly, one line per data point:
//
//	pi-otel metrics:
//	  gen_ai.client.token.usage{gen_ai.token.type=input} 812 {token}
//	  gen_ai.client.operation.duration{} count=2 sum=2.55 min=0.05 max=2.5 s
type consoleMetrics struct {
	mu          sync.Mutex
	w           io.Writer
	temporality sdkmetric.TemporalitySelector
}

func (e *consoleMetrics) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return e.temporality(k)
}

func (e *consoleMetrics) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *consoleMetrics) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var b strings.Builder
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			writeMetric(&b, m)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := io.WriteString(e.w, "pi-otel metrics:\n"+b.String())
	return err
}

func (e *consoleMetrics) ForceFlush(ctx context.Context) error { return ctx.Err() }
func (e *consoleMetrics) Shutdown(context.Context) error       { return nil }

func writeMetric(b *strings.Builder, m metricdata.Metrics) {
	line := func(attrs attribute.Set, value string) {
		fmt.Fprintf(b, "  %s{%s} %s", m.Name, formatSet(attrs), value)
		if m.Unit != "" {
			b.WriteString(" " + m.Unit)
		}
		b.WriteByte('\n')
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, strconv.FormatInt(p.Value, 10))
		}
	case metricdata.Sum[float64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, formatFloat(p.Value))
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, strconv.FormatInt(p.Value, 10))
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, formatFloat(p.Value))
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, histogramSummary(p.Count, float64(p.Sum), p.Min, p.Max))
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, histogramSummary(p.Count, p.Sum, p.Min, p.Max))
		}
	case metricdata.ExponentialHistogram[int64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, histogramSummary(p.Count, float64(p.Sum), p.Min, p.Max))
		}
	case metricdata.ExponentialHistogram[float64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, histogramSummary(p.Count, p.Sum, p.Min, p.Max))
		}
	case metricdata.Summary:
		for _, p := range d.DataPoints {
			line(p.Attributes, fmt.Sprintf("count=%d sum=%s", p.Count, formatFloat(p.Sum)))
		}
	}
}

func histogramSummary[N int64 | float64](count uint64, sum float64, lo, hi metricdata.Extrema[N]) string {
	s := fmt.Sprintf("count=%d sum=%s", count, formatFloat(sum))
	if v, ok := lo.Value(); ok {
		s += " min=" + formatFloat(float64(v))
	}
	if v, ok := hi.Value(); ok {
		s += " max=" + formatFloat(float64(v))
	}
	return s
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func formatSet(s attribute.Set) string {
	parts := make([]string, 0, s.Len())
	for _, kv := range s.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
	}
	return strings.Join(parts, ",")
}
