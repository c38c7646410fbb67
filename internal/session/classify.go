package session

import (
	"bytes"

	"github.com/pi-otel/pi-otel/internal/event"
)

// Starts reports whether first, the first line of a file, starts a
// session file: a header ({"type":"session",…} with an id), oh-my-pi's
// title line before its header, or an entry of a file without one, which
// Pi would not load but replay and watch trace by its entries. Pi's json
// mode starts its event stream with the very same header: Classify tells
// them apart from the lines that follow.
func Starts(first []byte) bool {
	h := event.ReadHeader(first)
	typ, ok := typeOf(&h)
	return h.IsSession() && h.ID != "" || ok && (knownEntry[typ] || typ == typeTitle && isTitle(first))
}

// typeOf is the type of a line h read, and whether it is an object whose
// type is a string or null (a record, by the rule the callers of
// encoding/json kept: a line of a type of another kind is none).
func typeOf(h *event.Header) (string, bool) {
	return h.Type, h.Valid && h.Mistyped&event.FieldType == 0
}

// Kind is what Classify found a file to be.
type Kind int

const (
	KindUnknown Kind = iota // neither: not a Pi file
	KindSession             // a session file (or only its header so far)
	KindStream              // a Pi event stream (json or rpc mode stdout)
)

// streamTypes are records that only an event stream has.
var streamTypes = map[string]bool{
	"agent_start": true, "agent_end": true, "agent_settled": true, "turn_start": true, "turn_end": true,
	"message_start": true, "message_update": true, "message_end": true, "tool_execution_start": true,
	"tool_execution_update": true, "tool_execution_end": true, "queue_update": true, "entry_appended": true,
	"compaction_start": true, "compaction_end": true, "auto_retry_start": true, "auto_retry_end": true,
	"session_info_changed": true, "thinking_level_changed": true, "response": true, "extension_error": true,
	"extension_ui_request": true, "bash_execution_update": true,
}

// Classify tells a session file from an event stream by its first lines
// (head: the start of the file, whole lines; a cut-off last line is
// ignored). Lines that are not Pi records are passed over; the first that
// is decides: a session header followed by an entry, or a header alone, is
// a session file; any record only streams have is a stream.
func Classify(head []byte) Kind {
	k, _ := ClassifyHead(head)
	return k
}

// ClassifyHead is Classify, and whether a record decided it: a header
// alone, or followed only by records of neither kind (oh-my-pi's stream
// starts with advisor_cost_changed), is a session file so far, unsure.
func ClassifyHead(head []byte) (Kind, bool) {
	lines := bytes.Split(head, []byte("\n"))
	lines = lines[:len(lines)-1] // after the last LF: empty, or cut off
	sawHeader := false
	for _, l := range lines {
		h := event.ReadHeader(bytes.TrimSpace(l)) // Unicode spaces too, as ever
		typ, ok := typeOf(&h)
		switch {
		case !ok:
		case h.IsSession() && h.ID != "":
			sawHeader = true
		case streamTypes[typ]:
			return KindStream, true
		case knownEntry[typ]:
			return KindSession, true
		}
	}
	if sawHeader {
		return KindSession, false
	}
	return KindUnknown, false
}

// isTitle reports whether b is oh-my-pi's title line, which its session
// files hold before the header: {"type":"title","v":1,"title":…}.
func isTitle(b []byte) bool {
	if !bytes.Contains(b, []byte(`"title"`)) {
		return false
	}
	h := event.ReadHeader(b)
	typ, ok := typeOf(&h)
	return ok && typ == typeTitle
}
