package telemetry

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
)

// consoleMetrics writes each collection compactly, one line per data point:
//
//	pi-otel metrics:
//	  gen_ai.client.token.usage{gen_ai.token.type=input} 812 {token}
//	  gen_ai.client.operation.duration{} count=2 sum=2.55 min=0.05 max=2.5 s
type consoleMetrics struct {
	otlpfile.Selectors // the same temporality and aggregation as the file's
	mu                 sync.Mutex
	w                  io.Writer
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
	if d, ok := m.Data.(metricdata.Summary); ok {
		for _, p := range d.DataPoints {
			line(p.Attributes, fmt.Sprintf("count=%d sum=%s", p.Count, formatFloat(p.Sum)))
		}
		return
	}
	// Only one of the two matches: a metric's points are all of one type.
	writePoints[int64](m.Data, line)
	writePoints[float64](m.Data, line)
}

// writePoints lists the points of a sum, gauge or histogram of Ns.
func writePoints[N int64 | float64](data metricdata.Aggregation, line func(attribute.Set, string)) {
	var numbers []metricdata.DataPoint[N]
	switch d := data.(type) {
	case metricdata.Sum[N]:
		numbers = d.DataPoints
	case metricdata.Gauge[N]:
		numbers = d.DataPoints
	case metricdata.Histogram[N]:
		for _, p := range d.DataPoints {
			line(p.Attributes, histogramSummary(p.Count, p.Sum, p.Min, p.Max))
		}
	case metricdata.ExponentialHistogram[N]:
		for _, p := range d.DataPoints {
			line(p.Attributes, histogramSummary(p.Count, p.Sum, p.Min, p.Max))
		}
	}
	for _, p := range numbers {
		line(p.Attributes, formatNumber(p.Value))
	}
}

func formatNumber[N int64 | float64](v N) string {
	if i, ok := any(v).(int64); ok {
		return strconv.FormatInt(i, 10)
	}
	return formatFloat(float64(v))
}

func histogramSummary[N int64 | float64](count uint64, sum N, lo, hi metricdata.Extrema[N]) string {
	s := fmt.Sprintf("count=%d sum=%s", count, formatFloat(float64(sum)))
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
		parts = append(parts, string(kv.Key)+"="+kv.Value.String())
	}
	return strings.Join(parts, ",")
}
