package agentmap_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// oh-my-pi sends an assistant message_start with the call's first chunk,
// and times the call at message_end (duration, ttft, completedAt). Its
// stream's chat spans then last the call's duration up to message_end,
// as its session file's do, with the ids, attributes and place they had.
func TestOhMyPiStreamChatLastsItsDuration(t *testing.T) {
	stream, err := os.ReadFile(repo.Path("testdata/sessions/omp-18.2.3/bash-tool.stream.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var want []event.Message
	for line := range bytes.Lines(stream) {
		var e struct {
			Type    string
			Message *event.Message
		}
		if json.Unmarshal(line, &e) == nil && e.Type == "message_end" && e.Message != nil && e.Message.Role == "assistant" {
			want = append(want, *e.Message)
		}
	}
	if len(want) != 2 {
		t.Fatalf("%d assistant message_ends in the capture, want 2", len(want))
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(spanid.NewGenerator(nil)))
	replaytest.Map(agentmap.New(tp), stream, agentmap.Ending{Reason: vocab.EndEOF})
	root := spantree.One(t, spantree.Recorded(t, rec))
	chats := root.Find("chat fake-model")
	if len(chats) != len(want) {
		t.Fatalf("%d chat spans, want %d", len(chats), len(want))
	}
	turns := root.Find("pi.turn")
	for i, c := range chats {
		m := want[i]
		if end := time.UnixMilli(int64(m.CompletedAt)); !c.End.Equal(end) {
			t.Errorf("chat %d ends %v, want completedAt %v", i, c.End, end)
		}
		if d := c.End.Sub(c.Start); math.Abs(d.Seconds()*1000-*m.Duration) > 1e-3 {
			t.Errorf("chat %d lasts %v, want its duration %v ms", i, d, *m.Duration)
		}
		if c.Start.Before(turns[i].Start) {
			t.Errorf("chat %d starts %v, before its turn %v", i, c.Start, turns[i].Start)
		}
		c.WantAttrs(t, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.response.id": m.ResponseID})
		if got, ok := c.Attr("gen_ai.response.time_to_first_chunk"); !ok || got == "" {
			t.Errorf("chat %d: no time to first chunk", i)
		}
	}
	// Every span started is one that ended: the stand-in starts nothing.
	if s, e := len(rec.Started()), len(rec.Ended()); s != e {
		t.Errorf("%d spans started, %d ended", s, e)
	}
}
