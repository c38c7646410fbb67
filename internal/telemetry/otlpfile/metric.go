package otlpfile

import (
	"context"
	"fmt"
	"io"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/pi-otel/pi-otel/internal/option"
)

// MetricExporter is an sdkmetric.Exporter that writes each collection as one
// ExportMetricsServiceRequest line.
type MetricExporter struct {
	lineWriter
	Selectors
}

var _ sdkmetric.Exporter = (*MetricExporter)(nil)

// Selectors answers an sdkmetric.Exporter's Temporality and Aggregation:
// with its TemporalitySelector and the SDK's default aggregation. pi-otel's
// console listing of metrics embeds it too.
type Selectors struct {
	TemporalitySelector sdkmetric.TemporalitySelector
}

// Temporality implements sdkmetric.Exporter.
func (s Selectors) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return s.TemporalitySelector(k)
}

// Aggregation implements sdkmetric.Exporter with the SDK's defaults.
func (Selectors) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// MetricOption configures a MetricExporter.
type MetricOption = option.Option[Selectors]

// WithTemporalitySelector sets the temporality asked of the reader. The
// default is the SDK's, cumulative.
func WithTemporalitySelector(s sdkmetric.TemporalitySelector) MetricOption {
	return option.Func[Selectors](func(c *Selectors) { c.TemporalitySelector = s })
}

// NewMetricExporter returns an exporter writing to w. It never closes w.
func NewMetricExporter(w io.Writer, opts ...MetricOption) *MetricExporter {
	return &MetricExporter{
		lineWriter: lineWriter{w: w},
		Selectors:  option.Apply(Selectors{TemporalitySelector: sdkmetric.DefaultTemporalitySelector}, opts),
	}
}

// Export writes rm as one line in a single Write. A collection with no data
// points writes nothing.
func (e *MetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	return e.export(ctx, func() ([]byte, error) {
		req, err := MetricRequest(rm)
		if err != nil || len(req.ResourceMetrics) == 0 {
			return nil, err
		}
		return marshalLine(req)
	})
}

// ForceFlush has nothing to do: Export writes straight through.
func (e *MetricExporter) ForceFlush(ctx context.Context) error { return ctx.Err() }

// MetricRequest converts one collection to an export request. Scopes and
// metrics without data points are left out, and so is the whole resource
// when nothing is left.
func MetricRequest(rm *metricdata.ResourceMetrics) (*colmetricpb.ExportMetricsServiceRequest, error) {
	req := &colmetricpb.ExportMetricsServiceRequest{}
	if rm == nil {
		return req, nil
	}
	out := &metricpb.ResourceMetrics{
		Resource:  resourceProto(rm.Resource),
		SchemaUrl: rm.Resource.SchemaURL(),
	}
	for _, sm := range rm.ScopeMetrics {
		ps := &metricpb.ScopeMetrics{Scope: scopeProto(sm.Scope), SchemaUrl: sm.Scope.SchemaURL}
		for _, m := range sm.Metrics {
			pm, err := metricProto(m)
			if err != nil {
				return nil, err
			}
			if pm != nil {
				ps.Metrics = append(ps.Metrics, pm)
			}
		}
		if len(ps.Metrics) > 0 {
			out.ScopeMetrics = append(out.ScopeMetrics, ps)
		}
	}
	if len(out.ScopeMetrics) > 0 {
		req.ResourceMetrics = append(req.ResourceMetrics, out)
	}
	return req, nil
}

// metricProto converts one metric, or returns nil when it has no points.
func metricProto(m metricdata.Metrics) (*metricpb.Metric, error) {
	pm := &metricpb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
	n, ok := numberMetric[int64](pm, m.Data)
	if !ok {
		n, ok = numberMetric[float64](pm, m.Data)
	}
	if d, isSummary := m.Data.(metricdata.Summary); isSummary {
		n, ok = len(d.DataPoints), true
		pm.Data = summaryProto(d)
	}
	if !ok {
		return nil, fmt.Errorf("otlpfile: metric %q has an unsupported aggregation %T", m.Name, m.Data)
	}
	if n == 0 {
		return nil, nil
	}
	return pm, nil
}

// numberMetric sets pm's data from a gauge, sum or histogram of Ns and
// returns its number of points; ok is false for any other aggregation.
func numberMetric[N int64 | float64](pm *metricpb.Metric, data metricdata.Aggregation) (n int, ok bool) {
	switch d := data.(type) {
	case metricdata.Gauge[N]:
		pm.Data = &metricpb.Metric_Gauge{Gauge: &metricpb.Gauge{DataPoints: numberPoints(d.DataPoints)}}
		return len(d.DataPoints), true
	case metricdata.Sum[N]:
		pm.Data = &metricpb.Metric_Sum{Sum: &metricpb.Sum{
			DataPoints:             numberPoints(d.DataPoints),
			AggregationTemporality: temporalityProto(d.Temporality),
			IsMonotonic:            d.IsMonotonic,
		}}
		return len(d.DataPoints), true
	case metricdata.Histogram[N]:
		pm.Data = histogramProto(d)
		return len(d.DataPoints), true
	case metricdata.ExponentialHistogram[N]:
		pm.Data = expHistogramProto(d)
		return len(d.DataPoints), true
	}
	return 0, false
}

func temporalityProto(t metricdata.Temporality) metricpb.AggregationTemporality {
	// metricdata and OTLP number temporalities differently.
	switch t {
	case metricdata.DeltaTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	case metricdata.CumulativeTemporality:
		return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	}
	return metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED
}

func numberPoints[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricpb.NumberDataPoint {
	out := make([]*metricpb.NumberDataPoint, 0, len(dps))
	for _, dp := range dps {
		p := &metricpb.NumberDataPoint{
			Attributes:        attributesProto(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Exemplars:         exemplars(dp.Exemplars),
		}
		switch v := any(dp.Value).(type) {
		case int64:
			p.Value = &metricpb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			p.Value = &metricpb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

func exemplars[N int64 | float64](exs []metricdata.Exemplar[N]) []*metricpb.Exemplar {
	if len(exs) == 0 {
		return nil
	}
	out := make([]*metricpb.Exemplar, 0, len(exs))
	for _, ex := range exs {
		p := &metricpb.Exemplar{
			FilteredAttributes: attributesProto(ex.FilteredAttributes),
			TimeUnixNano:       unixNano(ex.Time),
			SpanId:             ex.SpanID,
			TraceId:            ex.TraceID,
		}
		switch v := any(ex.Value).(type) {
		case int64:
			p.Value = &metricpb.Exemplar_AsInt{AsInt: v}
		case float64:
			p.Value = &metricpb.Exemplar_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

func extremum[N int64 | float64](e metricdata.Extrema[N]) *float64 {
	v, ok := e.Value()
	if !ok {
		return nil
	}
	f := float64(v)
	return &f
}

func histogramProto[N int64 | float64](h metricdata.Histogram[N]) *metricpb.Metric_Histogram {
	dps := make([]*metricpb.HistogramDataPoint, 0, len(h.DataPoints))
	for _, dp := range h.DataPoints {
		sum := float64(dp.Sum)
		dps = append(dps, &metricpb.HistogramDataPoint{
			Attributes:        attributesProto(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               &sum,
			BucketCounts:      dp.BucketCounts,
			ExplicitBounds:    dp.Bounds,
			Exemplars:         exemplars(dp.Exemplars),
			Min:               extremum(dp.Min),
			Max:               extremum(dp.Max),
		})
	}
	return &metricpb.Metric_Histogram{Histogram: &metricpb.Histogram{
		DataPoints:             dps,
		AggregationTemporality: temporalityProto(h.Temporality),
	}}
}

func expHistogramProto[N int64 | float64](h metricdata.ExponentialHistogram[N]) *metricpb.Metric_ExponentialHistogram {
	dps := make([]*metricpb.ExponentialHistogramDataPoint, 0, len(h.DataPoints))
	for _, dp := range h.DataPoints {
		sum := float64(dp.Sum)
		dps = append(dps, &metricpb.ExponentialHistogramDataPoint{
			Attributes:        attributesProto(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               &sum,
			Scale:             dp.Scale,
			ZeroCount:         dp.ZeroCount,
			Positive: &metricpb.ExponentialHistogramDataPoint_Buckets{
				Offset: dp.PositiveBucket.Offset, BucketCounts: dp.PositiveBucket.Counts,
			},
			Negative: &metricpb.ExponentialHistogramDataPoint_Buckets{
				Offset: dp.NegativeBucket.Offset, BucketCounts: dp.NegativeBucket.Counts,
			},
			Exemplars:     exemplars(dp.Exemplars),
			Min:           extremum(dp.Min),
			Max:           extremum(dp.Max),
			ZeroThreshold: dp.ZeroThreshold,
		})
	}
	return &metricpb.Metric_ExponentialHistogram{ExponentialHistogram: &metricpb.ExponentialHistogram{
		DataPoints:             dps,
		AggregationTemporality: temporalityProto(h.Temporality),
	}}
}

func summaryProto(s metricdata.Summary) *metricpb.Metric_Summary {
	dps := make([]*metricpb.SummaryDataPoint, 0, len(s.DataPoints))
	for _, dp := range s.DataPoints {
		p := &metricpb.SummaryDataPoint{
			Attributes:        attributesProto(dp.Attributes.ToSlice()),
			StartTimeUnixNano: unixNano(dp.StartTime),
			TimeUnixNano:      unixNano(dp.Time),
			Count:             dp.Count,
			Sum:               dp.Sum,
		}
		for _, q := range dp.QuantileValues {
			p.QuantileValues = append(p.QuantileValues, &metricpb.SummaryDataPoint_ValueAtQuantile{
				Quantile: q.Quantile, Value: q.Value,
			})
		}
		dps = append(dps, p)
	}
	return &metricpb.Metric_Summary{Summary: &metricpb.Summary{DataPoints: dps}}
}
