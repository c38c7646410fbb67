package agentmap_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
)

// parallelTools is a turn that starts n tools before any ends, then ends
// them in start order: what a model fanning out n tool calls produces.
func parallelTools(n int) []event.Event {
	evs := []event.Event{{Type: event.TypeAgentStart}, {Type: event.TypeTurnStart}}
	for i := range n {
		evs = append(evs, event.Event{Type: event.TypeToolExecutionStart, ToolCallID: fmt.Sprintf("call_%d", i), ToolName: "bash"})
	}
	for i := range n {
		evs = append(evs, event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: fmt.Sprintf("call_%d", i), ToolName: "bash"})
	}
	return append(evs, event.Event{Type: event.TypeTurnEnd}, event.Event{Type: event.TypeAgentEnd}, event.Event{Type: event.TypeAgentSettled})
}

// BenchmarkParallelTools is the 40k-parallel-tools case of issue 10
// through the mapper alone, with the SDK recording and dropping spans.
func BenchmarkParallelTools(b *testing.B) {
	for _, n := range []int{1000, 40000} {
		evs := parallelTools(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			t0 := time.Unix(1_800_000_000, 0)
			for b.Loop() {
				m := agentmap.New(sdktrace.NewTracerProvider(), agentmap.WithMaxOpenTools(1<<20))
				for i := range evs {
					m.Handle(agentmap.Input{Event: &evs[i], At: t0})
				}
			}
		})
	}
}

// BenchmarkNeverEndedTools starts tools that never end: memory must stay
// bounded by the open-tool cap, whatever the count.
func BenchmarkNeverEndedTools(b *testing.B) {
	b.ReportAllocs()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	t0 := time.Unix(1_800_000_000, 0)
	ev := event.Event{Type: event.TypeToolExecutionStart, ToolName: "bash"}
	m := agentmap.New(noop.NewTracerProvider())
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeAgentStart}, At: t0})
	i := 0
	for b.Loop() {
		ev.ToolCallID = fmt.Sprintf("call_%d", i)
		i++
		m.Handle(agentmap.Input{Event: &ev, At: t0})
	}
	b.StopTimer()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	// What the mapper holds, not what other benchmarks left behind.
	b.ReportMetric((float64(ms.HeapAlloc)-float64(before.HeapAlloc))/(1<<20), "MiB-held")
	runtime.KeepAlive(m)
}
