package agentmap

import (
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
)

// Record decodes one record of Pi's JSON stream (a line of `pi --mode
// json`, or of an RPC session's output, without its LF) and applies it at
// time at: package mapper's Record, for programs outside this module,
// which cannot name the decoder's types.
//
// A record that is not a Pi record (not JSON, not an object, no type) is
// ignored and its error returned. A record of a known type with a field
// of an unexpected shape is still applied, since it marks its place in
// the lifecycle, and the error says which field was dropped.
func (m *Mapper) Record(line []byte, at time.Time) error {
	if m.dec == nil {
		m.dec = event.NewDecoder(event.Options{Content: m.cfg.content != nil})
	}
	ev, err := m.dec.Decode(line)
	if err != nil && ev.Type == "" {
		return err
	}
	m.Handle(Input{Event: ev, At: at})
	return err
}
