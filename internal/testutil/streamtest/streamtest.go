// Package streamtest feeds a captured Pi event stream to a mapper the way
// `pi-otel replay` does, for tests of what the stream becomes.
package streamtest

import (
	"bytes"
	"time"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/mapper"
)

// Start is the stream clock's start: a fixed time, so that replays are
// reproducible.
var Start = time.Unix(1_700_000_000, 0)

// Replay maps every record of stream through m, on a stream clock from
// Start, closes m with end at the stream's last time, and returns the
// ingest counts.
func Replay(m *mapper.Mapper, stream []byte, end mapper.Ending) ingest.Stats {
	clock := ingest.NewStreamClock(Start)
	sink := ingest.New(m, ingest.WithClock(clock))
	r := framing.NewReader(bytes.NewReader(stream))
	for {
		b, err := r.Next()
		if err != nil {
			break
		}
		sink.Record(b)
	}
	m.Close(end, clock.Now())
	return sink.Stats()
}
