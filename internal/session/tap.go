package session

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
)

// tap wraps the TracerProvider the mapper writes through, so the session
// tracer can reach two spans the mapper keeps to itself: the last tool span
// it opened (a call whose result never came is closed in error, with the
// reason) and the root (usage and branch_summary entries count into its
// token and cost totals, which the mapper writes when it closes it).
type tap struct {
	trace.TracerProvider
	lastSpan trace.Span
	root     *rootSpan
	// extra is usage the mapper does not see, added to the root's totals.
	extra event.Usage
	// common goes on every span: the project, so that a backend can group
	// any span (chat costs above all) by it.
	common []attribute.KeyValue
}

func (t *tap) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return &tapTracer{Tracer: t.TracerProvider.Tracer(name, opts...), tap: t}
}

type tapTracer struct {
	trace.Tracer // embeds embedded.Tracer, as the API requires
	tap          *tap
}

func (t *tapTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if len(t.tap.common) > 0 {
		opts = append(opts, trace.WithAttributes(t.tap.common...))
	}
	ctx, s := t.Tracer.Start(ctx, name, opts...)
	t.tap.lastSpan = s
	if name == "invoke_agent pi" {
		r := &rootSpan{Span: s, tap: t.tap}
		t.tap.root = r
		return ctx, r
	}
	return ctx, s
}

// rootSpan adds the tap's extra usage to the totals the mapper sets.
type rootSpan struct {
	trace.Span
	tap *tap
}

func (r *rootSpan) SetAttributes(kv ...attribute.KeyValue) {
	x := &r.tap.extra
	if x.Input+x.Output+x.CacheRead+x.CacheWrite+x.Reasoning == 0 && x.Cost.Total == 0 {
		r.Span.SetAttributes(kv...)
		return
	}
	out := make([]attribute.KeyValue, len(kv))
	for i, a := range kv {
		switch a.Key {
		case semconv.GenAIUsageInputTokensKey:
			a = attribute.Int64(string(a.Key), a.Value.AsInt64()+x.Input+x.CacheRead+x.CacheWrite)
		case semconv.GenAIUsageOutputTokensKey:
			a = attribute.Int64(string(a.Key), a.Value.AsInt64()+x.Output)
		case semconv.GenAIUsageCacheReadInputTokensKey:
			a = attribute.Int64(string(a.Key), a.Value.AsInt64()+x.CacheRead)
		case semconv.GenAIUsageCacheCreationInputTokensKey:
			a = attribute.Int64(string(a.Key), a.Value.AsInt64()+x.CacheWrite)
		case semconv.GenAIUsageReasoningOutputTokensKey:
			a = attribute.Int64(string(a.Key), a.Value.AsInt64()+x.Reasoning)
		case "pi.cost.total":
			a = attribute.Float64(string(a.Key), a.Value.AsFloat64()+x.Cost.Total)
		}
		out[i] = a
	}
	r.Span.SetAttributes(out...)
}
