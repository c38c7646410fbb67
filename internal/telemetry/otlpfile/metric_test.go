package otlpfile_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
)

// collect records one of each instrument through the real SDK and collects
// them with the given temporality.
func collect(t *testing.T, temporality metricdata.Temporality) *metricdata.ResourceMetrics {
	t.Helper()
	reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(
		func(sdkmetric.InstrumentKind) metricdata.Temporality { return temporality }))
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(reader),
		sdkmetric.WithResource(resource.NewSchemaless(attribute.String("service.name", "pi"))),
		sdkmetric.WithView(sdkmetric.NewView(sdkmetric.Instrument{Name: "exp"},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: 20, MaxScale: 5}})),
	)
	m := mp.Meter("pi-otel", metric.WithInstrumentationVersion("1"))
	ctx := context.Background()

	tokens, _ := m.Int64Counter("gen_ai.client.token.usage.total", metric.WithUnit("{token}"), metric.WithDescription("tokens"))
	tokens.Add(ctx, 5, metric.WithAttributes(attribute.String("gen_ai.token.type", "input")))
	tokens.Add(ctx, 7, metric.WithAttributes(attribute.String("gen_ai.token.type", "output")))
	dur, _ := m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.1, 1, 10))
	dur.Record(ctx, 0.05)
	dur.Record(ctx, 2.5)
	live, _ := m.Int64UpDownCounter("pi.runs.active")
	live.Add(ctx, 1)
	exp, _ := m.Float64Histogram("exp")
	exp.Record(ctx, 3)
	exp.Record(ctx, 5)
	_, _ = m.Float64ObservableGauge("pi.gauge", metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
		o.Observe(0.5)
		return nil
	}))
	_, _ = m.Int64Counter("never.used") // no data points: left out of the line

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	return &rm
}

func TestMetricRoundTrip(t *testing.T) {
	rm := collect(t, metricdata.DeltaTemporality)
	var buf bytes.Buffer
	exp := otlpfile.NewMetricExporter(&buf)
	if err := exp.Export(context.Background(), rm); err != nil {
		t.Fatal(err)
	}
	if strings.Count(buf.String(), "\n") != 1 {
		t.Fatalf("want one line, got %q", buf.String())
	}
	req, err := otlpjson.UnmarshalMetrics(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(req.ResourceMetrics) != 1 || len(req.ResourceMetrics[0].ScopeMetrics) != 1 {
		t.Fatalf("shape = %v", req)
	}
	res := req.ResourceMetrics[0].Resource.Attributes
	if len(res) != 1 || res[0].Key != "service.name" || res[0].Value.GetStringValue() != "pi" {
		t.Errorf("resource = %v", res)
	}
	sm := req.ResourceMetrics[0].ScopeMetrics[0]
	if sm.Scope.Name != "pi-otel" || sm.Scope.Version != "1" {
		t.Errorf("scope = %v", sm.Scope)
	}
	got := map[string]*metricpb.Metric{}
	for _, m := range sm.Metrics {
		got[m.Name] = m
	}
	if len(got) != 5 {
		t.Errorf("metrics = %d, want 5 (the unused counter left out): %v", len(got), got)
	}

	sum := got["gen_ai.client.token.usage.total"].GetSum()
	if sum == nil || !sum.IsMonotonic || sum.AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA {
		t.Fatalf("token sum = %v", got["gen_ai.client.token.usage.total"])
	}
	if m := got["gen_ai.client.token.usage.total"]; m.Unit != "{token}" || m.Description != "tokens" {
		t.Errorf("unit/description = %q/%q", m.Unit, m.Description)
	}
	byType := map[string]int64{}
	for _, dp := range sum.DataPoints {
		if len(dp.Attributes) != 1 || dp.Attributes[0].Key != "gen_ai.token.type" {
			t.Errorf("point attributes = %v", dp.Attributes)
			continue
		}
		byType[dp.Attributes[0].Value.GetStringValue()] = dp.GetAsInt()
		if dp.TimeUnixNano == 0 || dp.StartTimeUnixNano == 0 || dp.StartTimeUnixNano > dp.TimeUnixNano {
			t.Errorf("times %d..%d", dp.StartTimeUnixNano, dp.TimeUnixNano)
		}
	}
	if byType["input"] != 5 || byType["output"] != 7 {
		t.Errorf("token points = %v", byType)
	}

	h := got["gen_ai.client.operation.duration"].GetHistogram()
	if h == nil || len(h.DataPoints) != 1 {
		t.Fatalf("histogram = %v", got["gen_ai.client.operation.duration"])
	}
	hp := h.DataPoints[0]
	if hp.Count != 2 || hp.GetSum() != 2.55 || hp.GetMin() != 0.05 || hp.GetMax() != 2.5 ||
		!slices.Equal(hp.ExplicitBounds, []float64{0.1, 1, 10}) || !slices.Equal(hp.BucketCounts, []uint64{1, 0, 1, 0}) {
		t.Errorf("histogram point = %v", hp)
	}

	ud := got["pi.runs.active"].GetSum()
	if ud == nil || ud.IsMonotonic || ud.DataPoints[0].GetAsInt() != 1 {
		t.Errorf("up-down counter = %v", got["pi.runs.active"])
	}

	eh := got["exp"].GetExponentialHistogram()
	if eh == nil || eh.DataPoints[0].Count != 2 || eh.DataPoints[0].GetSum() != 8 || eh.DataPoints[0].Positive == nil {
		t.Errorf("exponential histogram = %v", got["exp"])
	} else {
		var n uint64
		for _, c := range eh.DataPoints[0].Positive.BucketCounts {
			n += c
		}
		if n != 2 {
			t.Errorf("positive buckets hold %d values, want 2", n)
		}
	}

	g := got["pi.gauge"].GetGauge()
	if g == nil || g.DataPoints[0].GetAsDouble() != 0.5 {
		t.Errorf("gauge = %v", got["pi.gauge"])
	}
}

func TestMetricCumulativeAndExemplars(t *testing.T) {
	rm := collect(t, metricdata.CumulativeTemporality)
	req, err := otlpfile.MetricRequest(rm)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range req.ResourceMetrics[0].ScopeMetrics[0].Metrics {
		if s := m.GetSum(); s != nil && s.AggregationTemporality != metricpb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
			t.Errorf("%s temporality = %v", m.Name, s.AggregationTemporality)
		}
	}

	// Exemplars carry ids, which must be hex like span ids; summaries come
	// only from bridges, so build one by hand.
	now := time.Unix(1700000000, 0)
	traceID := []byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	spanID := []byte{0, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	rm = &metricdata.ResourceMetrics{
		Resource: resource.Empty(),
		ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{
			{Name: "with.exemplar", Data: metricdata.Sum[float64]{
				Temporality: metricdata.DeltaTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[float64]{{Time: now, Value: 1.5, Exemplars: []metricdata.Exemplar[float64]{{
					Time: now, Value: 1.5, TraceID: traceID, SpanID: spanID,
					FilteredAttributes: []attribute.KeyValue{attribute.String("k", "v")},
				}}}},
			}},
			{Name: "summary", Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{
				Time: now, Count: 3, Sum: 6, QuantileValues: []metricdata.QuantileValue{{Quantile: 0.5, Value: 2}, {Quantile: 1, Value: 3}},
			}}}},
		}}},
	}
	var buf bytes.Buffer
	if err := otlpfile.NewMetricExporter(&buf).Export(context.Background(), rm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"`) ||
		!strings.Contains(buf.String(), `"spanId":"00f067aa0ba902b7"`) {
		t.Errorf("exemplar ids are not hex: %s", buf.String())
	}
	back, err := otlpjson.UnmarshalMetrics(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	ms := back.ResourceMetrics[0].ScopeMetrics[0].Metrics
	ex := ms[0].GetSum().DataPoints[0].Exemplars[0]
	if !bytes.Equal(ex.TraceId, traceID) || !bytes.Equal(ex.SpanId, spanID) || ex.GetAsDouble() != 1.5 ||
		ex.FilteredAttributes[0].Key != "k" || ex.TimeUnixNano != uint64(now.UnixNano()) {
		t.Errorf("exemplar = %v", ex)
	}
	sp := ms[1].GetSummary().DataPoints[0]
	if sp.Count != 3 || sp.Sum != 6 || len(sp.QuantileValues) != 2 || sp.QuantileValues[1].Quantile != 1 || sp.QuantileValues[1].Value != 3 {
		t.Errorf("summary = %v", sp)
	}
}

func TestMetricExporterSkipsEmpty(t *testing.T) {
	var buf countingWriter
	exp := otlpfile.NewMetricExporter(&buf, otlpfile.WithTemporalitySelector(
		func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }))
	if exp.Temporality(sdkmetric.InstrumentKindCounter) != metricdata.DeltaTemporality {
		t.Error("temporality selector ignored")
	}
	empty := &metricdata.ResourceMetrics{Resource: resource.Empty(), ScopeMetrics: []metricdata.ScopeMetrics{{
		Metrics: []metricdata.Metrics{{Name: "x", Data: metricdata.Sum[int64]{}}},
	}}}
	if err := exp.Export(context.Background(), empty); err != nil {
		t.Fatal(err)
	}
	if buf.writes != 0 {
		t.Errorf("a collection without points wrote %q", buf.String())
	}
}
