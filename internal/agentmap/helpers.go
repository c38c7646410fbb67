package agentmap

import (
	"encoding/json"
	"strings"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// shortName bounds a name Pi sends (a record type, a level, an event
// name) as span names are bounded: such names are short, and one that is
// not must not be copied whole into telemetry.
func shortName(s string) string { return vocab.Clip(s, vocab.MaxNameDetail) }

// maxSpanNames bounds the span names the mapper keeps: the names come
// from the input, and a session's calls repeat a few tools and models.
const maxSpanNames = 64

type nameKey struct {
	family vocab.SpanFamily
	detail string
}

// spanName is family.Name(detail), made once per detail.
func (m *Mapper) spanName(family vocab.SpanFamily, detail string) string {
	k := nameKey{family, detail}
	if n, ok := m.names[k]; ok {
		return n
	}
	n := family.Name(detail)
	if len(m.names) < maxSpanNames {
		if m.names == nil {
			m.names = map[nameKey]string{}
		}
		k.detail = strings.Clone(detail) // kept: not a piece of a bigger string
		m.names[k] = n
	}
	return n
}

// assistantRaw re-encodes a decoded assistant message for content capture;
// only reached when the user opted in.
func assistantRaw(msg *event.Message) []byte {
	if len(msg.Raw) > 0 {
		return msg.Raw
	}
	b, _ := json.Marshal(msg)
	return b
}
