package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// The SDK applies OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT to span attributes but
// not to span events' (it only counts those). The specification means
// every attribute, so spans are wrapped to cut event attributes the same
// way. Only done when a limit is set.

type limitedProvider struct {
	embedded.TracerProvider
	tp    trace.TracerProvider
	limit int
}

func (p limitedProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return limitedTracer{tr: p.tp.Tracer(name, opts...), limit: p.limit}
}

type limitedTracer struct {
	embedded.Tracer
	tr    trace.Tracer
	limit int
}

func (t limitedTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, s := t.tr.Start(ctx, name, opts...)
	ls := limitedSpan{Span: s, limit: t.limit}
	return trace.ContextWithSpan(ctx, ls), ls
}

type limitedSpan struct {
	trace.Span
	limit int
}

func (s limitedSpan) AddEvent(name string, opts ...trace.EventOption) {
	c := trace.NewEventConfig(opts...)
	s.Span.AddEvent(name, trace.WithTimestamp(c.Timestamp()), trace.WithStackTrace(c.StackTrace()),
		trace.WithAttributes(cutValues(c.Attributes(), s.limit)...))
}

// cutValues cuts string values, and each string of a slice, to limit
// characters, as the SDK does for span attributes.
func cutValues(kvs []attribute.KeyValue, limit int) []attribute.KeyValue {
	for i, kv := range kvs {
		switch kv.Value.Type() {
		case attribute.STRING:
			if v := kv.Value.AsString(); len(v) > limit {
				kvs[i] = kv.Key.String(cutRunes(v, limit))
			}
		case attribute.STRINGSLICE:
			vs := kv.Value.AsStringSlice()
			for j, v := range vs {
				vs[j] = cutRunes(v, limit)
			}
			kvs[i] = kv.Key.StringSlice(vs)
		}
	}
	return kvs
}

func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s // fewer bytes than n means fewer characters
	}
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
