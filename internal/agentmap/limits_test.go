package agentmap_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// recorded maps evs and returns the ended spans, in end order.
func recorded(t *testing.T, evs []event.Event, opts ...agentmap.Option) ([]sdktrace.ReadOnlySpan, *agentmap.Mapper) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	m := agentmap.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), opts...)
	t0 := time.Unix(1_800_000_000, 0)
	for i := range evs {
		m.Handle(agentmap.Input{Event: &evs[i], At: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	m.Close(agentmap.Ending{Reason: vocab.EndEOF}, t0.Add(time.Hour))
	return rec.Ended(), m
}

func attrOf(s sdktrace.ReadOnlySpan, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func toolStart(id string) event.Event {
	return event.Event{Type: event.TypeToolExecutionStart, ToolCallID: id, ToolName: "bash"}
}

func toolEnd(id string) event.Event {
	return event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: id, ToolName: "bash"}
}

// TestOpenToolsAreCapped: past the cap the oldest open tool is ended as
// evicted and counted, as RPC tracing bounds its pending commands; the
// others end normally.
func TestOpenToolsAreCapped(t *testing.T) {
	evs := []event.Event{{Type: event.TypeAgentStart}, {Type: event.TypeTurnStart}}
	for i := range 10 {
		evs = append(evs, toolStart(fmt.Sprint(i)))
	}
	for i := 6; i < 10; i++ {
		evs = append(evs, toolEnd(fmt.Sprint(i)))
	}
	// The evicted ones end late: no second span, no orphan.
	evs = append(evs, event.Event{Type: event.TypeToolExecutionUpdate, ToolCallID: "0"})
	for i := range 6 {
		evs = append(evs, toolEnd(fmt.Sprint(i)))
	}
	evs = append(evs, event.Event{Type: event.TypeTurnEnd}, event.Event{Type: event.TypeAgentEnd}, event.Event{Type: event.TypeAgentSettled})
	spans, m := recorded(t, evs, agentmap.WithMaxOpenTools(4))

	tools := named(spans, "execute_tool bash")
	if len(tools) != 10 {
		t.Fatalf("%d tool spans, want 10", len(tools))
	}
	for i, s := range tools {
		id, _ := attrOf(s, "gen_ai.tool.call.id")
		reason, evicted := attrOf(s, vocab.EndReasonKey)
		if want := i < 6; evicted != want || (evicted && reason.AsString() != string(vocab.EndEvicted)) {
			t.Errorf("tool %s: pi.end_reason %v, want evicted=%v", id.AsString(), reason.String(), want)
		}
		if want := fmt.Sprint(i); id.AsString() != want {
			t.Errorf("span %d is tool %s, want %s (evicted oldest first)", i, id.AsString(), want)
		}
	}
	if got := m.Stats().ToolsEvicted; got != 6 {
		t.Errorf("Stats.ToolsEvicted = %d, want 6", got)
	}
	if a := m.Stats().Anomalies; a["tool_execution_end after eviction"] != 6 || len(a) != 1 {
		t.Errorf("anomalies %v, want 6 late ends after eviction only", a)
	}
	root := named(spans, vocab.SpanRoot)[0]
	if v, _ := attrOf(root, vocab.ToolsEvictedKey); v.AsInt64() != 6 {
		t.Errorf("root pi.tools_evicted = %v, want 6", v.String())
	}
	if v, _ := attrOf(root, vocab.ToolCallsKey); v.AsInt64() != 10 {
		t.Errorf("root pi.tool_calls = %v, want 10", v.String())
	}
}

// TestNeverEndedToolsStayBounded: a stream that starts tools and never
// ends them holds no more than the cap open: every start past it ends one.
func TestNeverEndedToolsStayBounded(t *testing.T) {
	const n, limit = 100_000, 1000
	rec := tracetest.NewSpanRecorder()
	m := agentmap.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), agentmap.WithMaxOpenTools(limit))
	t0 := time.Unix(1_800_000_000, 0)
	m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeAgentStart}, At: t0})
	for i := range n {
		ev := toolStart(fmt.Sprint(i))
		m.Handle(agentmap.Input{Event: &ev, At: t0})
	}
	if ended := len(rec.Ended()); ended != n-limit {
		t.Errorf("%d tools ended while starting %d, want %d: the open set is not bounded", ended, n, n-limit)
	}
	if got := m.Stats().ToolsEvicted; got != n-limit {
		t.Errorf("Stats.ToolsEvicted = %d, want %d", got, n-limit)
	}
}

// TestOverlappingCompactions: Pi 0.73 starts a second compaction before
// the first ends, then ends both. That is two spans, paired in order.
func TestOverlappingCompactions(t *testing.T) {
	before := func(n int64) event.Event {
		return event.Event{Type: event.TypeCompactionEnd, Reason: "threshold",
			Result:     []byte(fmt.Sprintf(`{"tokensBefore":%d,"estimatedTokensAfter":10}`, n)),
			Compaction: &event.Compaction{TokensBefore: new(n), EstimatedTokensAfter: new(int64(10))}}
	}
	evs := []event.Event{
		{Type: event.TypeAgentStart}, {Type: event.TypeAgentEnd},
		{Type: event.TypeCompactionStart, Reason: "threshold"},
		{Type: event.TypeCompactionStart, Reason: "overflow"},
		before(1000), before(2000),
		{Type: event.TypeAgentSettled},
	}
	spans, m := recorded(t, evs)
	comps := named(spans, vocab.SpanCompaction)
	if len(comps) != 2 {
		t.Fatalf("%d pi.compaction spans, want 2", len(comps))
	}
	for i, want := range []struct {
		reason string
		before int64
	}{{"threshold", 1000}, {"overflow", 2000}} {
		c := comps[i]
		r, _ := attrOf(c, vocab.CompactionReasonKey)
		b, _ := attrOf(c, vocab.CompactionTokensBeforeKey)
		o, _ := attrOf(c, vocab.CompactionOutcomeKey)
		if r.AsString() != want.reason || b.AsInt64() != want.before || o.AsString() != string(vocab.CompactionOK) {
			t.Errorf("compaction %d: reason %s, tokens_before %d, outcome %s; want %s, %d, ok",
				i, r.String(), b.AsInt64(), o.String(), want.reason, want.before)
		}
	}
	if a := m.Stats().Anomalies; len(a) != 0 {
		t.Errorf("anomalies %v", a)
	}
	if v, _ := attrOf(named(spans, vocab.SpanRoot)[0], vocab.CompactionsKey); v.AsInt64() != 2 {
		t.Errorf("root pi.compactions = %v, want 2", v.String())
	}
}

// TestSpanNamesAreBounded: a huge model or tool name keeps the span's kind
// and loses the rest.
func TestSpanNamesAreBounded(t *testing.T) {
	huge := strings.Repeat("é", 1<<19) // 1 MiB
	evs := []event.Event{
		{Type: event.TypeAgentStart}, {Type: event.TypeTurnStart},
		{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant", Model: huge}},
		{Type: event.TypeMessageEnd, Message: &event.Message{Role: "assistant", Model: huge, StopReason: "toolUse"}},
		{Type: event.TypeToolExecutionStart, ToolCallID: "a", ToolName: huge},
		{Type: event.TypeToolExecutionEnd, ToolCallID: "a", ToolName: huge},
		{Type: event.TypeTurnEnd}, {Type: event.TypeAgentEnd}, {Type: event.TypeAgentSettled},
	}
	spans, _ := recorded(t, evs)
	for _, kind := range []vocab.SpanFamily{vocab.SpanChat, vocab.SpanTool} {
		found := false
		for _, s := range spans {
			name := s.Name()
			if !strings.HasPrefix(name, kind.Prefix()) {
				continue
			}
			found = true
			if len(name) > len(kind.Prefix())+vocab.MaxNameDetail {
				t.Errorf("%s span name is %d bytes", kind, len(name))
			}
			if !strings.HasPrefix(huge, strings.TrimPrefix(name, kind.Prefix())) {
				t.Errorf("%s span name does not keep the start of the name, or splits a character", kind)
			}
		}
		if !found {
			t.Errorf("no %s span", kind)
		}
	}
}

// With a cap of two open tools and three tool ids, random streams evict
// and end evicted tools late all the time; the invariants still hold.
func TestRandomInterleavingsSmallCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		seq := make([]byte, rng.IntN(200))
		for j := range seq {
			seq[j] = byte(rng.UintN(256))
		}
		checkStream(t, seq, agentmap.WithMaxOpenTools(2))
	}
}

func FuzzMapperSmallCap(f *testing.F) {
	f.Add([]byte{0, 0, 4, 0, 10, 0, 10, 1, 10, 2, 12, 0, 11, 0, 12, 1, 5, 0, 1, 0, 3, 0})
	f.Fuzz(func(t *testing.T, seq []byte) { checkStream(t, seq, agentmap.WithMaxOpenTools(2)) })
}

// TestEventNamesAreBounded: names Pi sends that end up in span events (an
// unknown record type, a thinking level) are bounded like span names.
func TestEventNamesAreBounded(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	spans, _ := recorded(t, []event.Event{
		{Type: event.TypeAgentStart},
		{Type: huge},
		{Type: event.TypeThinkingLevelChanged, Level: huge},
		{Type: event.TypeAgentEnd}, {Type: event.TypeAgentSettled},
	})
	n := 0
	for _, s := range spans {
		for _, e := range s.Events() {
			for _, kv := range e.Attributes {
				n++
				if l := len(kv.Value.String()); l > vocab.MaxNameDetail {
					t.Errorf("%s: %s is %d bytes", e.Name, kv.Key, l)
				}
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d event attributes checked, want 2", n)
	}
}
