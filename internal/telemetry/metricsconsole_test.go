package telemetry

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestWriteMetricKinds pins the console line of every aggregation, int and
// float alike.
func TestWriteMetricKinds(t *testing.T) {
	set := attribute.NewSet(attribute.String("k", "v"))
	for _, tc := range []struct {
		data metricdata.Aggregation
		want string
	}{
		{metricdata.Sum[int64]{DataPoints: []metricdata.DataPoint[int64]{{Attributes: set, Value: 3}}}, "3"},
		{metricdata.Sum[float64]{DataPoints: []metricdata.DataPoint[float64]{{Attributes: set, Value: 0.25}}}, "0.25"},
		{metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Attributes: set, Value: -7}}}, "-7"},
		{metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Attributes: set, Value: 1e21}}}, "1e+21"},
		{metricdata.Histogram[int64]{DataPoints: []metricdata.HistogramDataPoint[int64]{{Attributes: set, Count: 2, Sum: 5,
			Min: metricdata.NewExtrema[int64](1), Max: metricdata.NewExtrema[int64](4)}}}, "count=2 sum=5 min=1 max=4"},
		{metricdata.Histogram[float64]{DataPoints: []metricdata.HistogramDataPoint[float64]{{Attributes: set, Count: 2, Sum: 2.55,
			Min: metricdata.NewExtrema(0.05), Max: metricdata.NewExtrema(2.5)}}}, "count=2 sum=2.55 min=0.05 max=2.5"},
		{metricdata.ExponentialHistogram[int64]{DataPoints: []metricdata.ExponentialHistogramDataPoint[int64]{{Attributes: set, Count: 1, Sum: 9}}},
			"count=1 sum=9"},
		{metricdata.ExponentialHistogram[float64]{DataPoints: []metricdata.ExponentialHistogramDataPoint[float64]{{Attributes: set, Count: 1, Sum: 0.5,
			Max: metricdata.NewExtrema(0.5)}}}, "count=1 sum=0.5 max=0.5"},
		{metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{Attributes: set, Count: 4, Sum: 10.5}}}, "count=4 sum=10.5"},
	} {
		var b strings.Builder
		writeMetric(&b, metricdata.Metrics{Name: "m", Unit: "s", Data: tc.data})
		if want := "  m{k=v} " + tc.want + " s\n"; b.String() != want {
			t.Errorf("%T: got %q, want %q", tc.data, b.String(), want)
		}
	}
}
