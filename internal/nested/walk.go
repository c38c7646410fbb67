package nested

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/pi-otel/pi-otel/internal/event"
)

// A subagent result is mostly the children's tool outputs: text the parser
// never reads. encoding/json would run every byte of it through its state
// machine once per level (result, details, entry, message); the walker
// below walks it with event.Members and event.Elements instead, and hands
// encoding/json only the small values it decodes (usage, nestedCalls, an
// escaped string). It reads values with event's Key and Read functions,
// as encoding/json does (keys ignoring case, the last of duplicate keys),
// and reports input it cannot walk as malformed rather than guessing;
// reference_test.go holds it to the encoding/json decoder it replaces.

// walker is the decoder Parse uses.
type walker struct{}

func (walker) toolResult(raw []byte) (toolResult, bool) {
	var tr toolResult
	ok := event.Members(raw, func(k, v []byte) bool {
		switch {
		case event.Key(k, "details"):
			tr.Details = v
		case event.Key(k, "usage"):
			tr.Usage = v
		case event.Key(k, "nestedCalls"):
			tr.NestedCalls = v
		}
		return true
	})
	return tr, ok
}

// MemberCarries reports whether the top-level member k: v of a tool
// result (k as written, escapes and all) may give ParseWith anything: a
// usage, nestedCalls, details that may hold runs or name a session file,
// or a key that may spell one of them once unescaped or folded. A result
// none of whose members carries anything gives ParseWith nothing, unless
// it is over MaxBytes (Oversize), so a caller that has its members at
// hand need not Probe it.
func MemberCarries(k, v []byte) bool {
	if bytes.ContainsFunc(k, func(r rune) bool { return r == '\\' || r >= utf8.RuneSelf }) {
		return true
	}
	switch {
	case event.Key(k, "usage"), event.Key(k, "nestedCalls"):
		return true
	case event.Key(k, "details"):
		return bytes.Contains(v, keyMessages) || bytes.Contains(v, keySessionFile)
	}
	return false
}

func (walker) object(raw []byte) (map[string]json.RawMessage, bool) {
	m := map[string]json.RawMessage{}
	ok := event.Members(raw, func(k, v []byte) bool {
		m[string(k)] = v
		return true
	})
	return m, ok
}

func (walker) array(raw []byte) ([]json.RawMessage, bool) {
	var list []json.RawMessage
	ok := event.Elements(raw, func(v []byte) bool {
		list = append(list, v)
		return true
	})
	return list, ok
}

var errField = errors.New("nested: a field of the wrong type")

func (w walker) entry(raw []byte, e *entry) error {
	bad := false
	if !event.Members(raw, func(k, v []byte) bool {
		switch {
		case event.Key(k, "agent"):
			bad = !event.ReadString(v, &e.Agent) || bad
		case event.Key(k, "type"):
			bad = !event.ReadString(v, &e.Type) || bad
		case event.Key(k, "task"):
			bad = !event.ReadString(v, &e.Task) || bad
		case event.Key(k, "stopReason"):
			bad = !event.ReadString(v, &e.StopReason) || bad
		case event.Key(k, "errorMessage"):
			bad = !event.ReadString(v, &e.ErrorMessage) || bad
		case event.Key(k, "model"):
			bad = !event.ReadString(v, &e.Model) || bad
		case event.Key(k, "sessionFile"):
			bad = !event.ReadString(v, &e.SessionFile) || bad
		case event.Key(k, "exitCode"):
			bad = !event.ReadPtr(v, &e.ExitCode, event.ReadInt, nil) || bad
		case event.Key(k, "usage"):
			var u *entryUsage
			if json.Unmarshal(v, &u) == nil {
				e.Usage = u
			} else {
				bad = true
			}
		case event.Key(k, "messages"):
			switch {
			case string(v) == "null":
				e.Messages = nil
			case v[0] == '[':
				list, ok := w.array(v)
				if list == nil && ok {
					list = []json.RawMessage{}
				}
				e.Messages = list
			default:
				bad = true
			}
		}
		return true
	}) || bad {
		return errField
	}
	return nil
}

func (walker) message(raw []byte, m *message) (malformed, skip bool) {
	if !event.Members(raw, func(k, v []byte) bool {
		ok := true
		switch {
		case event.Key(k, "role"):
			ok = event.ReadString(v, &m.Role)
		case event.Key(k, "provider"):
			ok = event.ReadString(v, &m.Provider)
		case event.Key(k, "model"):
			ok = event.ReadString(v, &m.Model)
		case event.Key(k, "responseModel"):
			ok = event.ReadString(v, &m.ResponseModel)
		case event.Key(k, "stopReason"):
			ok = event.ReadString(v, &m.StopReason)
		case event.Key(k, "errorMessage"):
			ok = event.ReadString(v, &m.ErrorMessage)
		case event.Key(k, "toolCallId"):
			ok = event.ReadString(v, &m.ToolCallID)
		case event.Key(k, "toolName"):
			ok = event.ReadString(v, &m.ToolName)
		case event.Key(k, "isError"):
			ok = event.ReadBool(v, &m.IsError)
		case event.Key(k, "timestamp"):
			ok = event.ReadFloat(v, &m.Timestamp)
		case event.Key(k, "durationMs"):
			ok = event.ReadPtr(v, &m.DurationMs, event.ReadFloat, nil)
		case event.Key(k, "usage"):
			ok = event.ReadPtr(v, &m.Usage, event.ReadUsage, nil)
		case event.Key(k, "content"):
			m.Content = nil
			if v[0] != '[' {
				break
			}
			var list blocks
			if event.Elements(v, func(b []byte) bool {
				var bl block
				if !event.Members(b, func(k, v []byte) bool {
					switch {
					case event.Key(k, "type"):
						return event.ReadString(v, &bl.Type)
					case event.Key(k, "id"):
						return event.ReadString(v, &bl.ID)
					case event.Key(k, "name"):
						return event.ReadString(v, &bl.Name)
					}
					return true
				}) {
					return false
				}
				list = append(list, bl)
				return true
			}) {
				m.Content = list
			}
		}
		malformed = malformed || !ok
		return true
	}) {
		// Valid JSON of another kind is a message with nothing in it, as
		// encoding/json reads it; input that is not JSON is no message.
		return true, !json.Valid(raw)
	}
	return malformed, false
}

func (walker) role(raw []byte) string {
	var r string
	event.Members(raw, func(k, v []byte) bool {
		if event.Key(k, "role") {
			event.ReadString(v, &r)
		}
		return true
	})
	return r
}
