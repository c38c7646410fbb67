package ingest_test

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
)

// TestAnchoredWaitsForTheStreamsTime: untimed records that open a stream
// are held back until a record says when it began, then placed there; a
// stream that never says keeps the clock's start.
func TestAnchoredWaitsForTheStreamsTime(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	began := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		records []string
		want    time.Time
	}{
		{"anchored", []string{`{"type":"agent_start"}`, `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}`}, began},
		{"no time", []string{`{"type":"agent_start"}`, `{"type":"turn_start"}`}, start},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := ingest.NewStreamClock(start)
			sink := ingest.New(agentmap.New(noop.NewTracerProvider()), ingest.WithClock(clock))
			in := ingest.NewAnchored(sink, clock)
			for _, r := range tc.records {
				in.Record([]byte(r))
			}
			held := int64(0) // an unanchored stream is held until Flush
			if tc.want == began {
				held = int64(len(tc.records))
			}
			if got := sink.Stats().Records; got != held {
				t.Errorf("%d records passed on before Flush, want %d", got, held)
			}
			in.Flush()
			if got := sink.Stats().Records; got != int64(len(tc.records)) {
				t.Errorf("%d records passed on, want %d", got, len(tc.records))
			}
			if !clock.Now().Equal(tc.want) {
				t.Errorf("clock at %v, want %v", clock.Now(), tc.want)
			}
		})
	}
}

// TestAnchoredDoesNotCopyTheRecordThatEndsTheWait: a huge record without a
// time at the start of a stream ends the lookahead; it is passed on from
// the caller's buffer, not copied, so replay's peak memory stays near twice
// the record (the framing's pieces and the record) instead of three times.
func TestAnchoredDoesNotCopyTheRecordThatEndsTheWait(t *testing.T) {
	const size = 16 << 20
	huge := append([]byte(`{"type":"tool_execution_end","toolCallId":"t","toolName":"bash","result":{"content":[{"type":"text","text":"`),
		bytes.Repeat([]byte("x"), size)...)
	huge = append(huge, `"}]},"isError":false}`...)
	clock := ingest.NewStreamClock(time.Now())
	sink := ingest.New(agentmap.New(noop.NewTracerProvider()), ingest.WithClock(clock))
	in := ingest.NewAnchored(sink, clock)
	in.Record([]byte(`{"type":"agent_start"}`)) // held: no time yet
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	in.Record(huge)
	runtime.ReadMemStats(&after)
	if got := sink.Stats().Records; got != 2 {
		t.Fatalf("%d records passed on, want both", got)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d >= size {
		t.Errorf("handling a %d-byte record that ends the wait allocated %d bytes, want it not copied", len(huge), d)
	}
}
