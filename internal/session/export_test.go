package session

import (
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
)

// Helpers only the tests use.

// Sniff reports whether first, the first line of a file, is a Pi session
// header ({"type":"session",...} with an id).
func Sniff(first []byte) bool {
	h := event.ReadHeader(first)
	return h.IsSession() && h.ID != ""
}

func (k Kind) String() string {
	switch k {
	case KindSession:
		return "session file"
	case KindStream:
		return "event stream"
	}
	return "unknown"
}

// decodeEntry decodes one entry line with encoding/json.
func decodeEntry(b []byte) (*entry, error) { return decodeEntryChecked(b, nil, nested.Origin{}, false) }
