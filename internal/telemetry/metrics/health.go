package metrics

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Health is a snapshot of pi-otel's own pipeline counters, each monotonic over the process life.
type Health struct {
	RecordsRead      int64 // JSONL records read from Pi
	RecordsMalformed int64 // records that were not valid JSON or not a known shape
	RecordsRepaired  int64 // lines that held several records, read as such
	SpansEnded       int64 // spans the mapper ended
	SpansExported    int64 // spans the exporter accepted
	SpansDropped     int64 // spans lost (queue full, export gave up)
	SpansRefused     int64 // spans the collector refused as invalid: lost, not sent again
	SpoolExpired     int64 // spooled spans held past the spool's age bound: dropped unsent
	ExportFailures   int64 // spans the exporter tried to send and could not
	SpoolCorrupt     int64 // damaged spool files set aside, their spans not sent
}

// refusedAttr and expiredAttr mark the spans.dropped series of the spans
// the collector refused and of those the spool held too long.
var (
	refusedAttr = metric.WithAttributes(attribute.String("error.type", "refused"))
	expiredAttr = metric.WithAttributes(attribute.String("error.type", "spool_expired"))
)

// RegisterHealth registers observable counters that report read() at each collection. read is
// called from the MeterProvider's collection goroutine and must be safe for that. opts are
// NewSpanMetrics' own: the counters share its scope, schema URL included. (One scope name
// with two schema URLs in a process is two scopes, which a Collector's Prometheus exporter
// can mix up into two series of one counter.)
func RegisterHealth(mp metric.MeterProvider, read func() Health, opts ...Option) error {
	if read == nil {
		return errors.New("metrics: RegisterHealth needs a read function")
	}
	m := mp.Meter(ScopeName, metric.WithSchemaURL(option.Apply(config{}, opts).schemaURL()))
	type def struct {
		name, unit, desc string
		value            func(Health) int64
	}
	defs := []def{
		{vocab.MetricRecordsRead, "{record}", "JSONL records read from Pi's stream.", func(h Health) int64 { return h.RecordsRead }},
		{vocab.MetricRecordsMalformed, "{record}", "Records that could not be decoded.", func(h Health) int64 { return h.RecordsMalformed }},
		{vocab.MetricRecordsRepaired, "{line}", "Lines that held several records with no line end between them, read as those records.", func(h Health) int64 { return h.RecordsRepaired }},
		{vocab.MetricSpansEnded, "{span}", "Spans ended by the mapper.", func(h Health) int64 { return h.SpansEnded }},
		{vocab.MetricSpansExported, "{span}", "Spans accepted by the trace exporter.", func(h Health) int64 { return h.SpansExported }},
		{vocab.MetricSpansDropped, "{span}", "Spans lost before export.", func(h Health) int64 { return h.SpansDropped }},
		{vocab.MetricExportFailures, "{span}", "Spans that failed to export.", func(h Health) int64 { return h.ExportFailures }},
		{vocab.MetricSpoolCorrupt, "{file}", "Damaged spool files set aside (renamed *.corrupt), whose spans were not sent.", func(h Health) int64 { return h.SpoolCorrupt }},
	}
	insts := make([]metric.Observable, 0, len(defs))
	counters := make([]metric.Int64ObservableCounter, 0, len(defs))
	for _, d := range defs {
		c, err := m.Int64ObservableCounter(d.name, metric.WithUnit(d.unit), metric.WithDescription(d.desc))
		if err != nil {
			return err
		}
		insts = append(insts, c)
		counters = append(counters, c)
	}
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		h := read() // one snapshot, so the counters agree with each other
		for i, d := range defs {
			o.ObserveInt64(counters[i], d.value(h))
			if d.name == vocab.MetricSpansDropped && h.SpansRefused > 0 {
				// Their own series: a collector that refuses data is
				// not a queue to enlarge.
				o.ObserveInt64(counters[i], h.SpansRefused, refusedAttr)
			}
			if d.name == vocab.MetricSpansDropped && h.SpoolExpired > 0 {
				// Nor is an outage longer than --spool-max-age.
				o.ObserveInt64(counters[i], h.SpoolExpired, expiredAttr)
			}
		}
		return nil
	}, insts...)
	return err
}
