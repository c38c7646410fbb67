package agentmap_test

import (
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/internal/testutil/benchutil"
	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// decoded is a realistic generated stream, decoded once, so that the
// benchmark measures the mapper alone.
var decoded = sync.OnceValues(func() ([]event.Event, int64) {
	data, recs := streamgen.BenchStream()
	evs := make([]event.Event, 0, len(recs))
	for _, r := range recs {
		ev, err := event.Decode(r, event.Options{})
		if err != nil {
			panic(err)
		}
		evs = append(evs, ev)
	}
	return evs, int64(len(data))
})

// BenchmarkMapper runs the mapper over the whole realistic mix, with a
// noop tracer provider (the mapper's own cost) and with the SDK recording
// spans and dropping them (what replay with --traces-exporter none does).
func BenchmarkMapper(b *testing.B) {
	evs, size := decoded()
	benchutil.EachTracerProvider(b, func(b *testing.B, newTP func() trace.TracerProvider) {
		b.SetBytes(size)
		b.ReportAllocs()
		t0 := time.Unix(1_800_000_000, 0)
		for b.Loop() {
			m := agentmap.New(newTP())
			for i := range evs {
				m.Handle(agentmap.Input{Event: &evs[i], At: t0.Add(time.Duration(i) * time.Millisecond)})
			}
			m.Close(agentmap.Ending{Reason: vocab.EndEOF}, t0.Add(time.Hour))
			if st := m.Stats(); len(st.Anomalies) != 0 || st.Roots == 0 {
				b.Fatalf("the generated stream is not clean: %+v", st)
			}
		}
		benchutil.ReportPerRecord(b, len(evs))
	})
}

// BenchmarkMapperMessageUpdate is the record nearly every event is: a delta
// inside an open assistant message.
func BenchmarkMapperMessageUpdate(b *testing.B) {
	m := agentmap.New(noop.NewTracerProvider())
	t0 := time.Unix(1_800_000_000, 0)
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeAgentStart}, At: t0})
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeTurnStart}, At: t0})
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant", Model: "m"}}, At: t0})
	ev := &event.Event{Type: event.TypeMessageUpdate, AssistantMessageEvent: &event.AssistantMessageEvent{Type: "text_delta"}}
	m.Handle(agentmap.Input{Event: ev, At: t0})
	b.ReportAllocs()
	for b.Loop() {
		m.Handle(agentmap.Input{Event: ev, At: t0})
	}
}

// BenchmarkMapperMessageUpdateLive is that record in a live run: each
// delta also hands its gap to the span metrics' time-per-output-chunk
// histogram (an SDK meter with a reader).
func BenchmarkMapperMessageUpdateLive(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	sm, err := metrics.NewSpanMetrics(mp)
	if err != nil {
		b.Fatal(err)
	}
	m := agentmap.New(noop.NewTracerProvider(), agentmap.WithChunkObserver(sm))
	t0 := time.Unix(1_800_000_000, 0)
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeAgentStart}, At: t0})
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeTurnStart}, At: t0})
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant", Provider: "anthropic", Model: "m"}}, At: t0})
	ev := &event.Event{Type: event.TypeMessageUpdate, AssistantMessageEvent: &event.AssistantMessageEvent{Type: "text_delta"}}
	m.Handle(agentmap.Input{Event: ev, At: t0})
	b.ReportAllocs()
	at := t0
	for b.Loop() {
		at = at.Add(20 * time.Millisecond)
		m.Handle(agentmap.Input{Event: ev, At: at})
	}
}

// rootsOnly records spans with no parent, as pi-otel report does for a
// grouping that reads only runs' roots.
type rootsOnly struct{}

func (rootsOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if trace.SpanContextFromContext(p.ParentContext).IsValid() {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
}

func (rootsOnly) Description() string { return "rootsOnly" }

// BenchmarkMapperSpans runs the mapper over the realistic mix without its
// message_update records (nearly all of them, and no span's start or
// end): the spans' cost, with ids derived from keys as for a session
// file. "roots" records the roots only, as a report does.
func BenchmarkMapperSpans(b *testing.B) {
	all, _ := decoded()
	var evs []event.Event
	for _, ev := range all {
		if ev.Type != event.TypeMessageUpdate {
			evs = append(evs, ev)
		}
	}
	for _, tc := range []struct {
		name string
		opts []sdktrace.TracerProviderOption
	}{
		{"all", nil},
		{"roots", []sdktrace.TracerProviderOption{sdktrace.WithSampler(rootsOnly{})}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			t0 := time.Unix(1_800_000_000, 0)
			for b.Loop() {
				tp := sdktrace.NewTracerProvider(append(tc.opts, sdktrace.WithIDGenerator(spanid.NewGenerator(nil)))...)
				m := agentmap.New(tp)
				for i := range evs {
					m.Handle(agentmap.Input{Event: &evs[i], At: t0.Add(time.Duration(i) * time.Millisecond), Key: "session/entry"})
				}
				m.Close(agentmap.Ending{Reason: vocab.EndEOF}, t0.Add(time.Hour))
				if st := m.Stats(); len(st.Anomalies) != 0 || st.Roots == 0 {
					b.Fatalf("the generated stream is not clean: %+v", st)
				}
			}
			benchutil.ReportPerRecord(b, len(evs))
		})
	}
}
