package ingest

import "bytes"

// The records held back while looking for the stream's start time are
// bounded in number and in bytes: records without a time can be huge.
const (
	anchorLookahead      = 64
	anchorLookaheadBytes = 4 << 20
)

// Anchored feeds a replayed stream to a Sink timed by a StreamClock. It
// holds back the first records until one says when the stream began and
// moves the clock there, so that spans opened before it are not placed at
// "now"; a stream that says nothing within 64 records or 4 MiB keeps the
// clock's start.
type Anchored struct {
	sink  *Sink
	clock *StreamClock
	head  [][]byte
	bytes int
	done  bool
}

// NewAnchored returns an Anchored feeding sink, whose clock is clock.
func NewAnchored(sink *Sink, clock *StreamClock) *Anchored {
	return &Anchored{sink: sink, clock: clock}
}

// Record handles one framed record. It reads rec only during the call.
func (a *Anchored) Record(rec []byte) {
	if a.done {
		a.sink.Record(rec)
		return
	}
	t, ok := Anchor([][]byte{rec})
	if !ok && len(a.head)+1 < anchorLookahead && a.bytes+len(rec) < anchorLookaheadBytes {
		a.head = append(a.head, bytes.Clone(rec))
		a.bytes += len(rec)
		return
	}
	if ok {
		a.clock.Reset(t)
	}
	// The record that ends the wait is passed on from the caller's buffer,
	// not held: a huge record is not copied.
	a.Flush()
	a.sink.Record(rec)
}

// Flush passes on what is held back: the stream ended before saying when
// it began.
func (a *Anchored) Flush() {
	a.done = true
	for _, h := range a.head {
		a.sink.Record(h)
	}
	a.head = nil
}
