package ingest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper"
)

func TestBadRecordsAreCountedAndReportedWithinLimits(t *testing.T) {
	rec := spantree.NewRecorder()
	m := mapper.New(rec)
	var warn bytes.Buffer
	s := New(m, WithWarnings(&warn))
	s.Record([]byte(`{"type":"agent_start"}`))
	for i := 0; i < 100; i++ {
		s.Record([]byte(`{not json`))
	}
	s.Record([]byte("{\"type\":\"x\xff\"}"))
	s.Record([]byte(`[1]`))
	s.Record([]byte(`{"no":"type"}`))
	// A known type whose field changed shape still counts for the lifecycle.
	s.Record([]byte(`{"type":"agent_settled","aborted":"yes"}`))
	st := s.Stats()
	if st.Records != 105 || st.Malformed != 104 || st.InvalidUTF8 != 1 || st.NotObject != 1 || st.NoType != 1 {
		t.Fatalf("stats %+v", st)
	}
	if lines := strings.Count(warn.String(), "\n"); lines != warnBurst {
		t.Fatalf("%d warning lines, want the burst of %d:\n%s", lines, warnBurst, warn.String())
	}
	if !strings.Contains(warn.String(), "passed through unchanged") {
		t.Fatalf("warning does not say the record was kept: %s", warn.String())
	}
	if m.Active() {
		t.Fatal("agent_settled with a malformed field did not close the run")
	}
	if len(rec.Spans.Ended()) != 2 { // the root and its agent run
		t.Fatalf("%d spans", len(rec.Spans.Ended()))
	}
}

func TestWarnLimiterReportsSuppressedCount(t *testing.T) {
	var l warnLimiter
	now := time.Unix(0, 0)
	for i := 0; i < warnBurst; i++ {
		if ok, _ := l.allow(now); !ok {
			t.Fatal("burst refused")
		}
	}
	for i := 0; i < 7; i++ {
		if ok, _ := l.allow(now.Add(time.Second)); ok {
			t.Fatal("allowed inside the interval")
		}
	}
	ok, suppressed := l.allow(now.Add(warnInterval + time.Second))
	if !ok || suppressed != 7 {
		t.Fatalf("ok=%v suppressed=%d", ok, suppressed)
	}
}

func TestStreamClock(t *testing.T) {
	start := time.Unix(100, 0)
	c := NewStreamClock(start)
	dur := 40.0
	at := func(ev event.Event) time.Time { return c.Time(&ev) }
	if got := at(event.Event{Type: event.TypeSession, Timestamp: "2026-11-29T10:00:00.000Z"}); got.Format(time.RFC3339) != "2026-11-29T10:00:00Z" {
		t.Fatalf("header time %v", got)
	}
	ms := float64(time.Date(2026, 11, 29, 10, 0, 1, 0, time.UTC).UnixMilli())
	got := at(event.Event{Type: event.TypeMessageEnd, Message: &event.Message{Role: "assistant", Timestamp: ms, DurationMs: &dur}})
	if want := time.UnixMilli(int64(ms)).Add(40 * time.Millisecond); !got.Equal(want) {
		t.Fatalf("message end %v, want %v", got, want)
	}
	// Two parallel tools: the second ends earlier than the first, and keeps
	// its own exact end although the clock has moved past it.
	t0 := c.Now()
	at(event.Event{Type: event.TypeToolExecutionStart, ToolCallID: "a"})
	at(event.Event{Type: event.TypeToolExecutionStart, ToolCallID: "b"})
	long, short := 100.0, 10.0
	if got := at(event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: "a", DurationMs: &long}); !got.Equal(t0.Add(100 * time.Millisecond)) {
		t.Fatalf("tool a ends %v", got)
	}
	if got := at(event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: "b", DurationMs: &short}); !got.Equal(t0.Add(10 * time.Millisecond)) {
		t.Fatalf("tool b ends %v", got)
	}
	// A retry's delay separates the failed run from the next one.
	before := c.Now()
	at(event.Event{Type: event.TypeAutoRetryStart, DelayMs: 2000})
	at(event.Event{Type: event.TypeEntryAppended})
	if got := at(event.Event{Type: event.TypeAgentStart}); !got.Equal(before.Add(2 * time.Second)) {
		t.Fatalf("retry delay not applied: %v after %v", got, before)
	}
	// Never backwards.
	if got := at(event.Event{Type: event.TypeMessageStart, Message: &event.Message{Timestamp: 1}}); got.Before(before) {
		t.Fatal("clock went backwards")
	}
}

func TestAnchorFindsTheFirstTimedRecord(t *testing.T) {
	recs := [][]byte{
		[]byte(`{"type":"agent_start"}`),
		[]byte(`garbage`),
		[]byte(`{"type":"message_start","message":{"role":"user","timestamp":1795988654058}}`),
	}
	got, ok := Anchor(recs)
	if !ok || got.UnixMilli() != 1795988654058 {
		t.Fatalf("%v %v", got, ok)
	}
	if _, ok := Anchor(recs[:2]); ok {
		t.Fatal("anchored on untimed records")
	}
}
