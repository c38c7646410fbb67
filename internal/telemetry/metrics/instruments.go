package metrics

import (
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// instruments creates instruments on a meter and gathers their errors, so
// that both conventions' sets (SpanMetrics, latestInstruments) are a list
// of one line per instrument.
type instruments struct {
	m    metric.Meter
	errs []error
}

// keep gathers err; errors.Join, in err, leaves out the nil ones.
func (in *instruments) keep(err error) { in.errs = append(in.errs, err) }

func (in *instruments) err() error { return errors.Join(in.errs...) }

func (in *instruments) int64Counter(name, unit, desc string) metric.Int64Counter {
	c, err := in.m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	in.keep(err)
	return c
}

func (in *instruments) float64Counter(name, unit, desc string) metric.Float64Counter {
	c, err := in.m.Float64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	in.keep(err)
	return c
}

func (in *instruments) int64Histogram(name, unit, desc string, buckets []float64) metric.Int64Histogram {
	h, err := in.m.Int64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(buckets...))
	in.keep(err)
	return h
}

func (in *instruments) float64Histogram(name, unit, desc string, buckets []float64) metric.Float64Histogram {
	h, err := in.m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(buckets...))
	in.keep(err)
	return h
}
