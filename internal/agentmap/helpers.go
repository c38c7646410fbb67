package agentmap

import (
	"encoding/json"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// shortName bounds a name Pi sends (a record type, a level, an event
// name) as span names are bounded: such names are short, and one that is
// not must not be copied whole into telemetry.
func shortName(s string) string { return vocab.Clip(s, vocab.MaxNameDetail) }

// assistantRaw re-encodes a decoded assistant message for content capture;
// only reached when the user opted in.
func assistantRaw(msg *event.Message) []byte {
	if len(msg.Raw) > 0 {
		return msg.Raw
	}
	b, _ := json.Marshal(msg)
	return b
}
