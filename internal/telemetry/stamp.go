package telemetry

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// WithSpanAttributes sets the attributes attrs returns on every span as
// it starts: facts of the whole process that the span metrics label by
// (the team, the repository a live run works in), which the resource
// cannot carry to a metric label. attrs is called once, at the first
// span, so it may wait for a bounded read that started beside Pi; the
// attributes are scrubbed as names, as every span's are.
func WithSpanAttributes(attrs func() []attribute.KeyValue) Option {
	return WithSpanProcessor(func(metric.MeterProvider) (sdktrace.SpanProcessor, error) {
		return &stamping{f: attrs}, nil
	})
}

type stamping struct {
	once  sync.Once
	f     func() []attribute.KeyValue
	attrs []attribute.KeyValue
}

func (p *stamping) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	p.once.Do(func() { p.attrs = p.f() })
	if len(p.attrs) > 0 {
		s.SetAttributes(p.attrs...)
	}
}

func (*stamping) OnEnd(sdktrace.ReadOnlySpan)      {}
func (*stamping) Shutdown(context.Context) error   { return nil }
func (*stamping) ForceFlush(context.Context) error { return nil }
