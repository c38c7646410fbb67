package agentmap_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// arrivals is a live clock with made-up arrival times: each record comes
// a different step after the one before. It notes when each output
// chunk (a *_delta update) of each model call arrived.
type arrivals struct {
	at     time.Time
	n      int
	deltas [][]time.Time // by call, in order
}

func (a *arrivals) Time(ev *event.Event) time.Time {
	a.n++
	a.at = a.at.Add(time.Duration(a.n%7+1) * 13 * time.Millisecond)
	switch {
	case ev.Type == event.TypeMessageStart && ev.Message != nil && ev.Message.Role == "assistant":
		a.deltas = append(a.deltas, nil)
	case ev.Type == event.TypeMessageUpdate && ev.AssistantMessageEvent != nil && len(a.deltas) > 0:
		switch ev.AssistantMessageEvent.Type {
		case "text_delta", "thinking_delta", "toolcall_delta":
			a.deltas[len(a.deltas)-1] = append(a.deltas[len(a.deltas)-1], a.at)
		}
	}
	return a.at
}

// gap is one OutputChunk call.
type gap struct {
	d               time.Duration
	provider, model string
	span            trace.SpanID
}

type chunkLog []gap

func (l *chunkLog) OutputChunk(ctx context.Context, d time.Duration, provider, model string) {
	*l = append(*l, gap{d, provider, model, trace.SpanContextFromContext(ctx).SpanID()})
}

// live maps a capture as `pi-otel run` would, records arriving at
// clock's times, and returns the spans and the gaps handed on.
func live(t *testing.T, stream []byte, clock ingest.Clock, opts ...agentmap.Option) ([]*spantree.Node, chunkLog) {
	t.Helper()
	var log chunkLog
	rec := spantree.NewRecorder()
	m := agentmap.New(rec, append(opts, agentmap.WithChunkObserver(&log))...)
	replaytest.Feed(m, stream, clock)
	m.Close(agentmap.Ending{Reason: vocab.EndEOF}, time.Now())
	return rec.Forest(t), log
}

// TestTimePerOutputChunk: in a live stream every output chunk after a
// call's first hands on the time since the chunk before, from the times
// the records arrived at, with the call's provider, model and span.
func TestTimePerOutputChunk(t *testing.T) {
	for _, c := range []struct{ version, name string }{
		{v160, "text"}, {v160, "bash-tool"}, {v160, "thinking"}, {v160, "parallel-tools"},
		{"pi-1.0.3", "bash-tool"}, {"pi-0.73.x", "bash-tool"},
	} {
		t.Run(c.version+"/"+c.name, func(t *testing.T) {
			clock := &arrivals{at: time.Unix(1_800_000_000, 0)}
			forest, got := live(t, replaytest.Capture(t, c.version, c.name), clock)
			var want []time.Duration
			for _, call := range clock.deltas {
				for i := 1; i < len(call); i++ {
					want = append(want, call[i].Sub(call[i-1]))
				}
			}
			if len(want) == 0 {
				t.Fatal("the capture has no call with two output chunks")
			}
			var ds []time.Duration
			chats := map[string]bool{}
			for _, c := range spantree.All(forest) {
				if c.Attrs["gen_ai.operation.name"] == "chat" {
					chats[c.SpanID] = true
				}
			}
			for _, g := range got {
				ds = append(ds, g.d)
				if g.provider != "fake" || g.model != "fake-model" {
					t.Errorf("gap labelled %q %q, want fake fake-model", g.provider, g.model)
				}
				if !chats[g.span.String()] {
					t.Errorf("gap's context holds span %s, not a chat span", g.span)
				}
			}
			if !slices.Equal(ds, want) {
				t.Errorf("gaps %v, want %v (the deltas' arrival times apart)", ds, want)
			}
		})
	}
}

// TestNoChunkTimesFromRebuiltTimes: a replay's clock puts every update of
// a call at one instant, so nothing is handed on, rather than zeros.
func TestNoChunkTimesFromRebuiltTimes(t *testing.T) {
	_, got := live(t, replaytest.Capture(t, v160, "bash-tool"), ingest.NewStreamClock(replaytest.Start), agentmap.WithInexactTimes())
	if len(got) != 0 {
		t.Errorf("a replay handed on %d chunk gaps: %v", len(got), got)
	}
}
