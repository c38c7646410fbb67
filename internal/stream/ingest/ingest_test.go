package ingest

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

func TestBadRecordsAreCountedAndReportedWithinLimits(t *testing.T) {
	s, m, rec, warn := recorded()
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
	if st.Records != 105 || st.Malformed != 103 || st.InvalidUTF8 != 1 || st.NotObject != 1 || st.NoType != 1 || st.FieldsDropped != 1 {
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

// recorded is a Sink on a Mapper whose spans go to rec and whose warnings
// go to warn.
func recorded() (s *Sink, m *agentmap.Mapper, rec *spantree.Recorder, warn *bytes.Buffer) {
	rec = spantree.NewRecorder()
	m = agentmap.New(rec)
	warn = new(bytes.Buffer)
	return New(m, WithWarnings(warn)), m, rec, warn
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
	// They start at the same instant of the stream, yet in the stream's
	// order, a nanosecond apart, so that sorting by start keeps it.
	t0 := c.Now()
	if sa, sb := at(event.Event{Type: event.TypeToolExecutionStart, ToolCallID: "a"}),
		at(event.Event{Type: event.TypeToolExecutionStart, ToolCallID: "b"}); !sa.Equal(t0) || !sb.Equal(t0.Add(1)) {
		t.Fatalf("parallel tools start at %v and %v, want %v and a nanosecond later", sa, sb, t0)
	}
	long, short := 100.0, 10.0
	if got := at(event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: "a", DurationMs: &long}); !got.Equal(t0.Add(100 * time.Millisecond)) {
		t.Fatalf("tool a ends %v", got)
	}
	if got := at(event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: "b", DurationMs: &short}); !got.Equal(t0.Add(10*time.Millisecond + 1)) {
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

// The last warning of the burst says that more are held back, and the
// sink tells how many were, so the caller can say so at the end.
func TestWarningsSayWhatIsHeldBack(t *testing.T) {
	var warn strings.Builder
	s := New(agentmap.New(spantree.NewRecorder()), WithWarnings(&warn))
	for i := 0; i < warnBurst+12; i++ {
		s.Record([]byte(`{not json`))
	}
	lines := strings.Split(strings.TrimSpace(warn.String()), "\n")
	if len(lines) != warnBurst || !strings.Contains(lines[warnBurst-1], "further ones are reported at most once per") {
		t.Errorf("warnings:\n%s\nwant %d, the last saying more are held back", warn.String(), warnBurst)
	}
	if n := s.Unreported(); n != 12 {
		t.Errorf("Unreported() = %d, want 12", n)
	}
}

// A tool result's timestamp is its end: the model call after a 9 s tool
// starts at its own timestamp, not 9 s later (the tool's durationMs was
// once added again to the result's timestamp).
func TestModelCallAfterAToolStartsAtItsTimestamp(t *testing.T) {
	c := NewStreamClock(time.Unix(100, 0))
	at := func(ev event.Event) time.Time { return c.Time(&ev) }
	base := float64(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli())
	chat, tool := 70.0, 9000.0
	at(event.Event{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant", Timestamp: base}})
	at(event.Event{Type: event.TypeMessageEnd, Message: &event.Message{Role: "assistant", Timestamp: base, DurationMs: &chat}})
	at(event.Event{Type: event.TypeToolExecutionStart, ToolCallID: "sub"})
	at(event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: "sub", DurationMs: &tool})
	end := base + chat + tool + 2
	res := event.Message{Role: "toolResult", Timestamp: end, DurationMs: &tool}
	if got := at(event.Event{Type: event.TypeMessageEnd, Message: &res}); got.UnixMilli() != int64(end) {
		t.Fatalf("tool result at %v, want its timestamp %v", got.UnixMilli(), int64(end))
	}
	next := end + 3
	if got := at(event.Event{Type: event.TypeMessageStart, Message: &event.Message{Role: "assistant", Timestamp: next}}); got.UnixMilli() != int64(next) {
		t.Fatalf("next model call starts at %v, want its timestamp %v (%v ms late)", got.UnixMilli(), int64(next), got.UnixMilli()-int64(next))
	}
}

// Records that met on one line are read as those records: counted as
// repaired, with what lay between them that was none as malformed.
func TestRecordsOnOneLine(t *testing.T) {
	s, m, rec, _ := recorded()
	s.Record([]byte(`{"type":"agent_start"}{"type":"turn_start"}`))
	s.Record([]byte(`{"type":"turn_end","mess` + "\x00\x00" + `{"type":"agent_end","messages":[]} `))
	s.Record([]byte(`{"type":"agent_settled"`)) // cut short: damaged, as before
	st := s.Stats()
	if st.Records != 5 || st.Repaired != 2 || st.Malformed != 2 {
		t.Fatalf("stats %+v, want 5 records, 2 repaired, 2 malformed", st)
	}
	s.Record([]byte(`{"type":"agent_settled"}`))
	if m.Active() {
		t.Fatal("the run did not close")
	}
	var names []string
	for _, sp := range rec.Spans.Ended() {
		names = append(names, sp.Name())
	}
	if len(names) != 3 { // the root, its agent run and the turn
		t.Fatalf("spans %q", names)
	}
}

// A line whose pieces hold no record ({}0) is one malformed record, not a
// repair, as a session file's reader counts it.
func TestSplitWithNoRecordIsOneMalformedRecord(t *testing.T) {
	for _, bad := range []string{"{}0", `{"a":1} {"b":2}`, "[1]{}", "{} junk {}"} {
		s, _, _, _ := recorded()
		s.Record([]byte(bad))
		if st := s.Stats(); st.Records != 1 || st.Repaired != 0 || st.Malformed != 1 {
			t.Errorf("%q: stats %+v, want one bad record and no repair", bad, st)
		}
	}
}
