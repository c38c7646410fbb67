package otlpfile_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
)

// TestAppendTracesMatchesMarshal holds the exporter's direct encoding to
// the reference one, protojson then ids rewritten (MarshalTraces of
// TraceRequest), byte for byte, on the fixed spans and on random ones of
// every shape: attribute types, odd strings and floats, resources, scopes,
// events, links, kinds and statuses.
func TestAppendTracesMatchesMarshal(t *testing.T) {
	check := func(t *testing.T, spans []sdktrace.ReadOnlySpan) {
		t.Helper()
		want, wantErr := otlpfile.MarshalTraces(otlpfile.TraceRequest(spans))
		var got bytes.Buffer
		gotErr := otlpfile.NewTraceExporter(&got).ExportSpans(context.Background(), spans)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("errors differ: reference %v, exporter %v", wantErr, gotErr)
		}
		if wantErr != nil {
			if got.Len() != 0 {
				t.Fatalf("a failed batch wrote %d bytes", got.Len())
			}
			return
		}
		if !bytes.Equal(got.Bytes(), want) {
			g, w := got.String(), string(want)
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			t.Fatalf("lines differ at byte %d:\n got …%s\nwant …%s", i, clip(g, i), clip(w, i))
		}
	}
	t.Run("fixed", func(t *testing.T) { check(t, recordSpans(t)) })
	for seed := range uint64(300) {
		t.Run(fmt.Sprint("random", seed), func(t *testing.T) {
			check(t, randomSpans(rand.New(rand.NewPCG(seed, 19))))
		})
	}
	t.Run("invalid UTF-8", func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		_, s := tp.Tracer("t").Start(context.Background(), "s", trace.WithAttributes(attribute.String("k", "a\xffb")))
		s.End()
		check(t, rec.Ended())
	})
}

func clip(s string, i int) string {
	lo, hi := max(i-40, 0), min(i+40, len(s))
	return s[lo:hi]
}

// randomSpans records a few traces through the SDK, from two resources
// and several scopes.
func randomSpans(r *rand.Rand) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	var tps []*sdktrace.TracerProvider
	for i := range 1 + r.IntN(2) {
		res := resource.NewWithAttributes(pick(r, "", "https://opentelemetry.io/schemas/1.26.0"), randomAttrs(r, 2)...)
		if i == 1 && r.IntN(2) == 0 {
			res = resource.Empty()
		}
		tps = append(tps, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res),
			sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
				AttributeValueLengthLimit: -1, AttributeCountLimit: 1 + r.IntN(20),
				EventCountLimit: 1 + r.IntN(4), LinkCountLimit: 1 + r.IntN(3),
				AttributePerEventCountLimit: 1 + r.IntN(4), AttributePerLinkCountLimit: 1 + r.IntN(4),
			})))
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	var ended []trace.SpanContext
	for range 1 + r.IntN(12) {
		tp := tps[r.IntN(len(tps))]
		var opts []trace.TracerOption
		if r.IntN(2) == 0 {
			opts = append(opts, trace.WithInstrumentationVersion(pick(r, "", "0.1.0")))
		}
		if r.IntN(3) == 0 {
			opts = append(opts, trace.WithInstrumentationAttributes(randomAttrs(r, 2)...))
		}
		tr := tp.Tracer(pick(r, "pi-otel/mapper", "other", ""), opts...)
		ctx := context.Background()
		if len(ended) > 0 && r.IntN(2) == 0 {
			parent := ended[r.IntN(len(ended))]
			if r.IntN(2) == 0 {
				ts, _ := trace.ParseTraceState("vendor=abc")
				parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: parent.TraceID(), SpanID: parent.SpanID(),
					TraceFlags: parent.TraceFlags(), TraceState: ts, Remote: true})
				ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
			} else {
				ctx = trace.ContextWithSpanContext(ctx, parent)
			}
		}
		start := []trace.SpanStartOption{
			trace.WithSpanKind(trace.SpanKind(r.IntN(6))),
			trace.WithAttributes(randomAttrs(r, 8)...),
		}
		if r.IntN(4) > 0 {
			start = append(start, trace.WithTimestamp(t0.Add(time.Duration(r.Int64N(1e12)))))
		}
		for range r.IntN(3) {
			if len(ended) > 0 {
				start = append(start, trace.WithLinks(trace.Link{SpanContext: ended[r.IntN(len(ended))], Attributes: randomAttrs(r, 3)}))
			}
		}
		_, s := tr.Start(ctx, randomString(r), start...)
		for range r.IntN(5) {
			s.AddEvent(randomString(r), trace.WithTimestamp(t0.Add(time.Duration(r.Int64N(1e12)))), trace.WithAttributes(randomAttrs(r, 3)...))
		}
		switch r.IntN(3) {
		case 1:
			s.SetStatus(codes.Error, pick(r, "", randomString(r)))
		case 2:
			s.SetStatus(codes.Ok, randomString(r))
		}
		s.End(trace.WithTimestamp(t0.Add(time.Duration(r.Int64N(2e12)))))
		ended = append(ended, s.SpanContext())
	}
	return rec.Ended()
}

func pick[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }

func randomAttrs(r *rand.Rand, n int) []attribute.KeyValue {
	var kvs []attribute.KeyValue
	for range r.IntN(n + 1) {
		kvs = append(kvs, attribute.KeyValue{Key: attribute.Key(pick(r, "", "k", "traceId", "gen_ai.usage.input_tokens", randomString(r))), Value: randomValue(r, 2)})
	}
	return kvs
}

func randomValue(r *rand.Rand, depth int) attribute.Value {
	n := 10
	if depth == 0 {
		n = 5
	}
	switch r.IntN(n) {
	case 0:
		return attribute.BoolValue(r.IntN(2) == 0)
	case 1:
		return attribute.Int64Value(pick(r, 0, -1, math.MaxInt64, math.MinInt64, r.Int64()))
	case 2:
		return attribute.Float64Value(randomFloat(r))
	case 3:
		return attribute.StringValue(randomString(r))
	case 4:
		return attribute.ByteSliceValue([]byte(randomString(r)))
	case 5:
		return attribute.BoolSliceValue([]bool{true, false}[:r.IntN(3)])
	case 6:
		return attribute.Int64SliceValue([]int64{1, -9007199254740993}[:r.IntN(3)])
	case 7:
		fs := make([]float64, r.IntN(4))
		for i := range fs {
			fs[i] = randomFloat(r)
		}
		return attribute.Float64SliceValue(fs)
	case 8:
		ss := make([]string, r.IntN(4))
		for i := range ss {
			ss[i] = randomString(r)
		}
		return attribute.StringSliceValue(ss)
	default:
		vs := make([]attribute.Value, r.IntN(4))
		for i := range vs {
			vs[i] = randomValue(r, depth-1)
		}
		if r.IntN(2) == 0 {
			return attribute.SliceValue(vs...)
		}
		kvs := make([]attribute.KeyValue, len(vs))
		for i, v := range vs {
			kvs[i] = attribute.KeyValue{Key: attribute.Key(fmt.Sprint("k", i)), Value: v}
		}
		return attribute.MapValue(kvs...)
	}
}

func randomFloat(r *rand.Rand) float64 {
	return pick(r, 0, math.Copysign(0, -1), 1.5, -2, 1e-7, 1e21, 1e20, 123456.789, math.MaxFloat64,
		math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1), r.NormFloat64()*math.Pow(10, float64(r.IntN(40)-20)))
}

// randomString mixes what JSON escapes (quotes, backslashes, controls,
// U+2028/9, HTML characters) with plain and multibyte text.
func randomString(r *rand.Rand) string {
	parts := []string{"", "a", "plain text ", `"`, `\`, "\n", "\r\t", "\b\f", "\x00", "\x1f", "\x7f", "<>&",
		"\u2028", "\u2029", "é", "日本", "😀", "\ufffd", "/", "'"}
	var sb strings.Builder
	for range r.IntN(8) {
		sb.WriteString(pick(r, parts...))
	}
	return sb.String()
}
