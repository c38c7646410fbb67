package nested

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/pi-otel/pi-otel/internal/event"
)

// A subagent result is mostly the children's tool outputs: text the parser
// never reads. encoding/json would run every byte of it through its state
// machine once per level (result, details, entry, message); the walker
// below walks it with event.Members and event.Elements instead, and hands
// encoding/json only the small values it decodes (usage, nestedCalls, an
// escaped string). It reads values as encoding/json does (keys ignoring
// case, the last of duplicate keys), and reports input it cannot walk as
// malformed rather than guessing; reference_test.go holds it to the
// encoding/json decoder it replaces.

// key reports whether k names field, as encoding/json matches names.
func key(k []byte, field string) bool {
	return len(k) == len(field) && (string(k) == field || bytes.EqualFold(k, []byte(field)))
}

// str decodes a string value into dst; null leaves it. It reports false for
// another kind.
func str(v []byte, dst *string) bool {
	switch {
	case len(v) >= 2 && v[0] == '"':
		inner := v[1 : len(v)-1]
		if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			*dst = string(inner)
			return true
		}
		return json.Unmarshal(v, dst) == nil
	case string(v) == "null":
		return true
	}
	return false
}

// num decodes a number value into dst; null leaves it.
func num(v []byte, dst *float64) bool {
	if string(v) == "null" {
		return true
	}
	if len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return false
	}
	*dst = f
	return true
}

// boolean decodes a boolean value into dst; null leaves it.
func boolean(v []byte, dst *bool) bool {
	switch string(v) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	case "null":
	default:
		return false
	}
	return true
}

// usage decodes a message's usage into dst as encoding/json does for well
// typed input, without reflection: every assistant message has one. A
// value of the wrong type anywhere in it leaves dst and reports false.
func usage(v []byte, dst **event.Usage) bool {
	if string(v) == "null" {
		*dst = nil
		return true
	}
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	var u event.Usage
	ok := true
	if !event.Members(v, func(k, v []byte) bool {
		switch {
		case key(k, "input"):
			ok = integer(v, &u.Input) && ok
		case key(k, "output"):
			ok = integer(v, &u.Output) && ok
		case key(k, "cacheRead"):
			ok = integer(v, &u.CacheRead) && ok
		case key(k, "cacheWrite"):
			ok = integer(v, &u.CacheWrite) && ok
		case key(k, "reasoning"):
			ok = integer(v, &u.Reasoning) && ok
		case key(k, "totalTokens"):
			ok = integer(v, &u.TotalTokens) && ok
		case key(k, "cost"):
			ok = cost(v, &u.Cost) && ok
		}
		return true
	}) || !ok {
		return false
	}
	*dst = &u
	return true
}

func cost(v []byte, c *event.Cost) bool {
	if string(v) == "null" {
		return true
	}
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	ok := true
	return event.Members(v, func(k, v []byte) bool {
		switch {
		case key(k, "input"):
			ok = num(v, &c.Input) && ok
		case key(k, "output"):
			ok = num(v, &c.Output) && ok
		case key(k, "cacheRead"):
			ok = num(v, &c.CacheRead) && ok
		case key(k, "cacheWrite"):
			ok = num(v, &c.CacheWrite) && ok
		case key(k, "total"):
			ok = num(v, &c.Total) && ok
		}
		return true
	}) && ok
}

// integer decodes an integer value into dst; null leaves it. A fraction or
// an exponent is no int64 to encoding/json either.
func integer(v []byte, dst *int64) bool {
	if string(v) == "null" {
		return true
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// walker is the decoder Parse uses.
type walker struct{}

func (walker) toolResult(raw []byte) (toolResult, bool) {
	var tr toolResult
	ok := event.Members(raw, func(k, v []byte) bool {
		switch {
		case key(k, "details"):
			tr.Details = v
		case key(k, "usage"):
			tr.Usage = v
		case key(k, "nestedCalls"):
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
	case key(k, "usage"), key(k, "nestedCalls"):
		return true
	case key(k, "details"):
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
		case key(k, "agent"):
			bad = !str(v, &e.Agent) || bad
		case key(k, "type"):
			bad = !str(v, &e.Type) || bad
		case key(k, "task"):
			bad = !str(v, &e.Task) || bad
		case key(k, "stopReason"):
			bad = !str(v, &e.StopReason) || bad
		case key(k, "errorMessage"):
			bad = !str(v, &e.ErrorMessage) || bad
		case key(k, "model"):
			bad = !str(v, &e.Model) || bad
		case key(k, "sessionFile"):
			bad = !str(v, &e.SessionFile) || bad
		case key(k, "exitCode"):
			if string(v) == "null" {
				e.ExitCode = nil
			} else if n, err := strconv.Atoi(string(v)); err == nil {
				e.ExitCode = &n
			} else {
				bad = true
			}
		case key(k, "usage"):
			var u *entryUsage
			if json.Unmarshal(v, &u) == nil {
				e.Usage = u
			} else {
				bad = true
			}
		case key(k, "messages"):
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
		case key(k, "role"):
			ok = str(v, &m.Role)
		case key(k, "provider"):
			ok = str(v, &m.Provider)
		case key(k, "model"):
			ok = str(v, &m.Model)
		case key(k, "responseModel"):
			ok = str(v, &m.ResponseModel)
		case key(k, "stopReason"):
			ok = str(v, &m.StopReason)
		case key(k, "errorMessage"):
			ok = str(v, &m.ErrorMessage)
		case key(k, "toolCallId"):
			ok = str(v, &m.ToolCallID)
		case key(k, "toolName"):
			ok = str(v, &m.ToolName)
		case key(k, "isError"):
			ok = boolean(v, &m.IsError)
		case key(k, "timestamp"):
			ok = num(v, &m.Timestamp)
		case key(k, "durationMs"):
			if string(v) == "null" {
				m.DurationMs = nil
				break
			}
			var d float64
			if ok = num(v, &d); ok {
				m.DurationMs = &d
			}
		case key(k, "usage"):
			ok = usage(v, &m.Usage)
		case key(k, "content"):
			m.Content = nil
			if v[0] != '[' {
				break
			}
			var list blocks
			if event.Elements(v, func(b []byte) bool {
				var bl block
				if !event.Members(b, func(k, v []byte) bool {
					switch {
					case key(k, "type"):
						return str(v, &bl.Type)
					case key(k, "id"):
						return str(v, &bl.ID)
					case key(k, "name"):
						return str(v, &bl.Name)
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
		if key(k, "role") {
			str(v, &r)
		}
		return true
	})
	return r
}
