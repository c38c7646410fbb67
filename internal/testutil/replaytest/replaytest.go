// Package replaytest maps captured Pi streams the way `pi-otel replay`
// does, for the tests of the mapper and of what consumes its spans.
package replaytest

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// Start is where a replayed stream's clock starts, fixed so that the
// times in a tree are the same on every run.
var Start = time.Unix(1_700_000_000, 0)

// Capture is testdata/captures/VERSION/NAME.jsonl.
func Capture(t testing.TB, version, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(repo.Captures(version, name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Map feeds the records of stream to m through an ingest sink on a stream
// clock that starts at Start, closes m with end, and returns the sink's
// stats.
func Map(m *agentmap.Mapper, stream []byte, end agentmap.Ending) ingest.Stats {
	clock := ingest.NewStreamClock(Start)
	st := Feed(m, stream, clock)
	m.Close(end, clock.Now())
	return st
}

// Feed gives m the records of stream through an ingest sink on clock,
// leaving m open, and returns the sink's stats.
func Feed(m *agentmap.Mapper, stream []byte, clock ingest.Clock) ingest.Stats {
	sink := ingest.New(m, ingest.WithClock(clock))
	r := framing.NewReader(bytes.NewReader(stream))
	for {
		b, err := r.Next()
		if err != nil {
			break
		}
		sink.Record(b)
	}
	return sink.Stats()
}
