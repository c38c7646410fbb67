package metrics_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

func TestHealthCountersReportSnapshots(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	var calls atomic.Int64
	h := metrics.Health{RecordsRead: 10, RecordsMalformed: 1, RecordsRepaired: 4, SpansEnded: 7, SpansExported: 5, SpansDropped: 2, ExportFailures: 3, SpoolCorrupt: 1}
	if err := metrics.RegisterHealth(mp, func() metrics.Health { calls.Add(1); return h }); err != nil {
		t.Fatal(err)
	}

	read := func() map[string]int64 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			if sm.Scope.SchemaURL != vocab.SchemaURL {
				t.Errorf("schema %q, want %q", sm.Scope.SchemaURL, vocab.SchemaURL)
			}
			for _, m := range sm.Metrics {
				s, ok := m.Data.(metricdata.Sum[int64])
				if !ok || !s.IsMonotonic || len(s.DataPoints) != 1 {
					t.Fatalf("%s: %T (%+v), want one monotonic int64 sum point", m.Name, m.Data, m.Data)
				}
				out[m.Name] = s.DataPoints[0].Value
			}
		}
		return out
	}

	wantEqual(t, "health", read(), map[string]int64{
		vocab.MetricRecordsRead: 10, vocab.MetricRecordsMalformed: 1, vocab.MetricSpansEnded: 7,
		vocab.MetricSpansExported: 5, vocab.MetricSpansDropped: 2, vocab.MetricExportFailures: 3,
		vocab.MetricSpoolCorrupt: 1, vocab.MetricRecordsRepaired: 4,
	})
	h.SpansExported, h.SpansDropped = 9, 4
	got := read()
	if got[vocab.MetricSpansExported] != 9 || got[vocab.MetricSpansDropped] != 4 {
		t.Errorf("second collection %v, want exported 9 dropped 4", got)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("read called %d times for 2 collections, want one snapshot per collection", n)
	}
}

func TestRegisterHealthNeedsReader(t *testing.T) {
	mp := sdkmetric.NewMeterProvider()
	defer mp.Shutdown(context.Background())
	if err := metrics.RegisterHealth(mp, nil); err == nil {
		t.Error("RegisterHealth(nil) succeeded")
	}
}

// Spans lost for a reason no queue size mends have their own series of
// spans.dropped, beside the plain one: refused by the collector, and held
// in the spool past its age bound.
func TestDroppedHasSeriesByReason(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	h := metrics.Health{SpansDropped: 2, SpansRefused: 3, SpoolExpired: 4}
	if err := metrics.RegisterHealth(mp, func() metrics.Health { return h }); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != vocab.MetricSpansDropped {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := dp.Attributes.Value("error.type")
				got[v.AsString()] = dp.Value
			}
		}
	}
	wantEqual(t, "spans.dropped by error.type", got, map[string]int64{"": 2, "refused": 3, "spool_expired": 4})
}

// TestHealthSharesTheSpanMetricsScope: in either mode the health counters
// and the span metrics are one scope, schema URL included. In the latest
// mode they once declared two schema URLs under one name, and a
// Collector's Prometheus exporter then showed a long process's counters
// as two series each, doubling their sums.
func TestHealthSharesTheSpanMetricsScope(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   []metrics.Option
		schema string
	}{
		{"v1.41", nil, vocab.SchemaURL},
		{"latest", []metrics.Option{metrics.WithGenAILatest()}, vocab.LatestSchemaURL},
	} {
		t.Run(c.name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			defer mp.Shutdown(context.Background())
			sm, err := metrics.NewSpanMetrics(mp, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := metrics.RegisterHealth(mp, func() metrics.Health { return metrics.Health{SpansEnded: 3} }, c.opts...); err != nil {
				t.Fatal(err)
			}
			sm.OutputChunk(context.Background(), time.Second, "anthropic", "claude-x")
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			var scopes []string
			for _, sm := range rm.ScopeMetrics {
				scopes = append(scopes, sm.Scope.Name+" "+sm.Scope.SchemaURL)
			}
			if want := metrics.ScopeName + " " + c.schema; len(scopes) != 1 || scopes[0] != want {
				t.Errorf("scopes %q, want one: %q", scopes, want)
			}
		})
	}
}
