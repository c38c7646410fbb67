package agentmap

import (
	"errors"
	"fmt"
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
)

// Record decodes one record of Pi's JSON stream (a line of `pi --mode
// json`, or of an RPC session's output, without its LF) and applies it at
// time at: package mapper's Record, for programs outside this module,
// which cannot name the decoder's types.
//
// A record that is not a Pi record (not JSON, not an object, no type) is
// ignored and its error returned. A record of a known type with a field
// of an unexpected shape is still applied, since it marks its place in
// the lifecycle, and the error says which field was dropped. A line that
// holds several records, written with no LF between them, is applied as
// those records (event.SplitLine); the error is then the first of theirs,
// or of the bytes between them that are none.
func (m *Mapper) Record(line []byte, at time.Time) error {
	if m.dec == nil {
		m.dec = event.NewDecoder(event.Options{Content: m.cfg.content != nil})
	}
	err := m.record(line, at)
	// The scan fails with these before anything is decoded: the line was
	// not applied, and may be several records.
	if !errors.Is(err, event.ErrInvalidJSON) && !errors.Is(err, event.ErrInvalidUTF8) {
		return err
	}
	pieces := event.SplitLine(line)
	if pieces == nil {
		return err
	}
	var first error
	for _, p := range pieces {
		err := fmt.Errorf("%w: %d bytes between records", event.ErrInvalidJSON, p.End-p.Start)
		if p.Value {
			err = m.record(line[p.Start:p.End], at)
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// record applies one record: a whole line, or one of a line taken apart.
func (m *Mapper) record(rec []byte, at time.Time) error {
	ev, err := m.dec.Decode(rec)
	if err != nil && ev.Type == "" {
		return err
	}
	m.Handle(Input{Event: ev, At: at, Nested: nested.FromEvent(ev)})
	return err
}
