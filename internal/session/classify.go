package session

import (
	"bytes"
	"encoding/json"
)

// Sniff reports whether first, the first line of a file, is a Pi session
// header ({"type":"session",...} with a version, or a version-1 header).
// Pi's json mode starts its event stream with the very same header, so a
// true answer means "a session file or a json-mode stream": Classify tells
// them apart from the lines that follow.
func Sniff(first []byte) bool {
	h, ok := decodeHeader(bytes.TrimRight(first, "\r\n"))
	return ok && h.ID != ""
}

// Starts reports whether first, the first line of a file, starts a
// session file: a header (Sniff), oh-my-pi's title line before its header,
// or an entry of a file without one, which Pi would not load but replay
// and watch trace by its entries.
func Starts(first []byte) bool {
	first = bytes.TrimRight(first, "\r\n")
	if Sniff(first) || isTitle(first) {
		return true
	}
	var rec struct {
		Type string `json:"type"`
	}
	return isObject(first) && json.Unmarshal(first, &rec) == nil && knownEntry[rec.Type]
}

// Kind is what Classify found a file to be.
type Kind int

const (
	KindUnknown Kind = iota // neither: not a Pi file
	KindSession             // a session file (or only its header so far)
	KindStream              // a Pi event stream (json or rpc mode stdout)
)

func (k Kind) String() string {
	switch k {
	case KindSession:
		return "session file"
	case KindStream:
		return "event stream"
	}
	return "unknown"
}

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
		l = bytes.TrimSpace(l)
		var rec struct {
			Type string `json:"type"`
		}
		if len(l) == 0 || json.Unmarshal(l, &rec) != nil {
			continue
		}
		switch {
		case rec.Type == typeSession && Sniff(l):
			sawHeader = true
		case streamTypes[rec.Type]:
			return KindStream, true
		case knownEntry[rec.Type]:
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
	var rec struct {
		Type string `json:"type"`
	}
	return isObject(b) && bytes.Contains(b, []byte(`"title"`)) && json.Unmarshal(b, &rec) == nil && rec.Type == typeTitle
}
