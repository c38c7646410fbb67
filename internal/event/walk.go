package event

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The helpers below read JSON that validate has already accepted, so they
// skip without checking. Every decoding helper returns false when the value
// is not of a shape it decodes exactly as encoding/json would; the caller
// then falls back to encoding/json for the whole record. skipString and
// skipValue also serve Members and Elements (json.go) on JSON nobody has
// checked, so they report -1 where a value does not end.

// skipString returns the index after the closing quote of the string whose
// content starts at b[i], or -1 when it does not close.
func skipString(b []byte, i int) int {
	// Keys and enum values end within a few bytes: look at those one by
	// one before paying for a call.
	for end := min(i+16, len(b)); i < end; i++ {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // the escaped byte cannot end the string
		}
	}
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		if !Escaped(b, q) {
			return q + 1
		}
		i = q + 1
	}
	return -1
}

// Escaped reports whether the quote at b[q] is escaped: an odd run of
// backslashes precedes it.
func Escaped(b []byte, q int) bool {
	k := q
	for k > 0 && b[k-1] == '\\' {
		k--
	}
	return (q-k)%2 == 1
}

// skipValue returns the end of the value that starts at b[i], or -1 when
// it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i+1)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i+1)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	start := i
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if i == start {
				return -1
			}
			return i
		}
		i++
	}
	return i
}

// objectIter walks the members of a valid object.
type objectIter struct {
	b    []byte
	i    int // the next member's key; once done, the closing brace
	done bool
}

// iterObject starts at the '{' at b[i].
func iterObject(b []byte, i int) objectIter {
	i = skipSpace(b, i+1)
	return objectIter{b: b, i: i, done: b[i] == '}'}
}

// next returns the next member's key (without quotes) and its value span.
func (it *objectIter) next() (key []byte, vs, ve int, ok bool) {
	if it.done {
		return nil, 0, 0, false
	}
	b, i := it.b, it.i
	ke := skipString(b, i+1)
	key = b[i+1 : ke-1]
	i = skipSpace(b, ke)
	vs = skipSpace(b, i+1) // past the ':'
	ve = skipValue(b, vs)
	i = skipSpace(b, ve)
	if b[i] == ',' {
		it.i = skipSpace(b, i+1)
	} else {
		it.i, it.done = i, true
	}
	return key, vs, ve, true
}

// members calls fn with the key and value of each member of the valid
// object v, as long as fn returns true, and reports whether it did for all.
func members(v []byte, fn func(key, val []byte) bool) bool {
	it := iterObject(v, 0)
	for {
		key, vs, ve, ok := it.next()
		if !ok {
			return true
		}
		if !fn(key, v[vs:ve]) {
			return false
		}
	}
}

// end is the index after the object's closing brace, once next has
// returned every member: the walk found it, so it need not be skipped.
func (it *objectIter) end() int { return it.i + 1 }

// plainKey reports whether a key can only match a field by its exact
// bytes or by ASCII case folding: it has no escapes and is ASCII.
func plainKey(k []byte) bool {
	for _, c := range k {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// foldsToAny reports whether k equals one of names ignoring ASCII case,
// which encoding/json also treats as a match.
func foldsToAny(k []byte, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return Key(k, n) })
}

// seen guards against duplicate keys: encoding/json lets the last one win
// (and merges objects), which the fast path does not reproduce.
type seen uint64

func (s *seen) first(bit uint) bool {
	m := seen(1) << bit
	if *s&m != 0 {
		return false
	}
	*s |= m
	return true
}

func decodeString(v []byte, dst *string) bool {
	switch v[0] {
	case 'n':
		return true // null leaves a string alone
	case '"':
		in := v[1 : len(v)-1]
		if bytes.IndexByte(in, '\\') < 0 {
			*dst = internValue(in)
			return true
		}
		if s, ok := unescape(in); ok {
			*dst = s
			return true
		}
		// \u escapes: let encoding/json unquote, surrogates and all. (Into
		// a local, so that dst does not escape to the heap.)
		var s string
		if json.Unmarshal(v, &s) != nil {
			return false
		}
		*dst = s
		return true
	}
	return false
}

// unescape is the body in of a valid JSON string unquoted, when its
// escapes all stand for one byte (a prompt's or a section's newlines and
// quotes); ok is false for a \u escape, which encoding/json decodes.
func unescape(in []byte) (s string, ok bool) {
	var b strings.Builder
	b.Grow(len(in))
	for {
		j := bytes.IndexByte(in, '\\')
		if j < 0 {
			b.Write(in)
			return b.String(), true
		}
		b.Write(in[:j])
		if j+1 == len(in) {
			return "", false // a lone backslash: not JSON, encoding/json says so
		}
		c := in[j+1]
		switch c {
		case '"', '\\', '/':
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default:
			return "", false
		}
		b.WriteByte(c)
		in = in[j+2:]
	}
}

func parseInt64(v []byte) (int64, bool) {
	if 0 < len(v) && len(v) <= 18 { // small non-negative integers, the usual case
		var n int64
		for _, c := range v {
			if c-'0' > 9 {
				goto general
			}
			n = n*10 + int64(c-'0')
		}
		return n, true
	}
general:
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

func parseFloat(v []byte) (float64, bool) {
	// A number starts with '-' or a digit; strconv would also read Inf,
	// +1 or .5.
	if len(v) == 0 || v[0] != '-' && v[0]-'0' > 9 {
		return 0, false
	}
	if f, ok := shortDecimal(v); ok {
		return f, true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// shortDecimal reads a number of at most 15 digits and no exponent (a
// cost, a duration, a timestamp in ms) exactly as strconv.ParseFloat
// does: its digits and the power of ten it divides by are both exact
// float64s, and one division of exact values rounds correctly. ok is false
// for any other number.
func shortDecimal(v []byte) (float64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	var mant uint64
	digits, frac := 0, -1 // frac: digits after the point; -1 before it
	for _, c := range v {
		switch {
		case c-'0' <= 9:
			mant = mant*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 || frac == 0 {
		return 0, false
	}
	f := float64(mant)
	if frac > 0 {
		f /= pow10[frac]
	}
	if neg {
		f = -f
	}
	return f, true
}

// pow10 are the powers of ten shortDecimal divides by, all exact.
var pow10 = [16]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// decodeRaw copies the value, as json.RawMessage's UnmarshalJSON does
// (null included); with alias it points into the record instead. The
// slice is capped either way, so appending to it never writes into the
// bytes that follow.
func decodeRaw(v []byte, dst *json.RawMessage, alias bool) {
	if alias {
		*dst = json.RawMessage(v[:len(v):len(v)])
		return
	}
	*dst = append(json.RawMessage(nil), v...)
}

// decodeRawList splits an array into copies of its elements (or, with
// alias, views of them). The copies share one copy of the array, each
// capped so that appending to one cannot overwrite the next.
func decodeRawList(v []byte, dst *[]json.RawMessage, alias bool) bool {
	switch v[0] {
	case 'n':
		*dst = nil
		return true
	case '[':
	default:
		return false
	}
	buf := v
	if !alias {
		buf = append([]byte(nil), v...)
	}
	list := []json.RawMessage{}
	i := skipSpace(buf, 1)
	for buf[i] != ']' {
		e := skipValue(buf, i)
		list = append(list, json.RawMessage(buf[i:e:e]))
		i = skipSpace(buf, e)
		if buf[i] == ',' {
			i = skipSpace(buf, i+1)
		}
	}
	*dst = list
	return true
}

// internValue returns the strings Pi repeats in every record without
// allocating them again.
func internValue(b []byte) string {
	switch string(b) {
	case "text_delta":
		return "text_delta"
	case "thinking_delta":
		return "thinking_delta"
	case "toolcall_delta":
		return "toolcall_delta"
	case "text_start":
		return "text_start"
	case "text_end":
		return "text_end"
	case "thinking_start":
		return "thinking_start"
	case "thinking_end":
		return "thinking_end"
	case "toolcall_start":
		return "toolcall_start"
	case "toolcall_end":
		return "toolcall_end"
	case "start":
		return "start"
	case "done":
		return "done"
	case "error":
		return "error"
	case "assistant":
		return "assistant"
	case "user":
		return "user"
	case "toolResult":
		return "toolResult"
	case "system":
		return "system"
	case "stop":
		return "stop"
	case "toolUse":
		return "toolUse"
	case "length":
		return "length"
	case "aborted":
		return "aborted"
	case "pending":
		return "pending"
	case "bash":
		return "bash"
	case "read":
		return "read"
	case "edit":
		return "edit"
	case "write":
		return "write"
	// Content block types, read by ToolCalls and BashCalls.
	case "text":
		return "text"
	case "thinking":
		return "thinking"
	case "toolCall":
		return "toolCall"
	case "image":
		return "image"
	}
	return string(b)
}

// internType is internValue for record types.
func internType(b []byte) string {
	switch string(b) {
	case TypeMessageUpdate:
		return TypeMessageUpdate
	case TypeSession:
		return TypeSession
	case TypeAgentStart:
		return TypeAgentStart
	case TypeAgentEnd:
		return TypeAgentEnd
	case TypeAgentSettled:
		return TypeAgentSettled
	case TypeTurnStart:
		return TypeTurnStart
	case TypeTurnEnd:
		return TypeTurnEnd
	case TypeMessageStart:
		return TypeMessageStart
	case TypeMessageEnd:
		return TypeMessageEnd
	case TypeToolExecutionStart:
		return TypeToolExecutionStart
	case TypeToolExecutionUpdate:
		return TypeToolExecutionUpdate
	case TypeToolExecutionEnd:
		return TypeToolExecutionEnd
	case TypeQueueUpdate:
		return TypeQueueUpdate
	case TypeEntryAppended:
		return TypeEntryAppended
	case TypeSessionInfoChanged:
		return TypeSessionInfoChanged
	case TypeThinkingLevelChanged:
		return TypeThinkingLevelChanged
	case TypeCompactionStart:
		return TypeCompactionStart
	case TypeCompactionEnd:
		return TypeCompactionEnd
	case TypeAutoRetryStart:
		return TypeAutoRetryStart
	case TypeAutoRetryEnd:
		return TypeAutoRetryEnd
	case TypeSummarizationRetrySchedule:
		return TypeSummarizationRetrySchedule
	case TypeSummarizationRetryAttempt:
		return TypeSummarizationRetryAttempt
	case TypeSummarizationRetryFinished:
		return TypeSummarizationRetryFinished
	case TypeBashExecutionUpdate:
		return TypeBashExecutionUpdate
	case TypeExtensionError:
		return TypeExtensionError
	case TypeExtensionUIRequest:
		return TypeExtensionUIRequest
	case TypeResponse:
		return TypeResponse
	// A session file's entries, which its reader decodes here too.
	case "message":
		return "message"
	case "model_change":
		return "model_change"
	case "thinking_level_change":
		return "thinking_level_change"
	case "custom":
		return "custom"
	case "custom_message":
		return "custom_message"
	case "compaction":
		return "compaction"
	case "context_edit":
		return "context_edit"
	case "label":
		return "label"
	case "session_info":
		return "session_info"
	}
	return string(b)
}
