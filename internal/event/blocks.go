package event

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// ToolCalls lists the ids and names of the toolCall blocks of content, a
// message's content as the Decoder returned it (so valid JSON), as
// decoding it into []struct{ Type, ID, Name string } with encoding/json
// and keeping the blocks of type "toolCall" would. A session history
// holds every assistant message once, whole, and this runs on each of
// them. ok is false when content has a shape this does not read exactly
// as encoding/json (not an array, an element that is not an object, an
// escaped or case-folded key, a value that is not a string); the caller
// then decodes it with encoding/json.
func ToolCalls(content []byte) (ids, names []string, ok bool) {
	i := skipSpace(content, 0)
	if i >= len(content) || content[i] != '[' {
		return nil, nil, false
	}
	// Pairs of id and name, then one allocation for both lists.
	var pairs [16]string
	found := pairs[:0]
	ok = eachBlock(content, i, func(typ, id, name string, _ []byte) {
		if typ == "toolCall" {
			found = append(found, id, name)
		}
	})
	if !ok {
		return nil, nil, false
	}
	n := len(found) / 2
	if n == 0 {
		return nil, nil, true
	}
	both := make([]string, 2*n)
	for k := range n {
		both[k], both[n+k] = found[2*k], found[2*k+1]
	}
	return both[:n:n], both[n:], true
}

// blockKeys are the keys eachBlock reads; one that folds to them (a case
// that encoding/json would match too) is not read exactly.
var blockKeys = []string{"type", "id", "name", "arguments"}

// eachBlock hands fn the type, id, name and raw arguments of each block of
// the array content opens at i (valid JSON, as the Decoder returns it), as
// decoding it into []struct{ Type, ID, Name string; Arguments
// json.RawMessage } with encoding/json would. It reports false, at once,
// for a shape it does not read exactly so: an element that is not an
// object or null, an escaped or case-folded key, a value of type, id or
// name that is not a string.
func eachBlock(content []byte, i int, fn func(typ, id, name string, args []byte)) bool {
	i = skipSpace(content, i+1)
	for content[i] != ']' {
		switch content[i] {
		case 'n': // null: a block with no fields
			i += len("null")
		case '{':
			var typ, id, name string
			var args []byte
			it := iterObject(content, i)
			for {
				k, vs, ve, more := it.next()
				if !more {
					break
				}
				var dst *string
				switch {
				case string(k) == "type":
					dst = &typ
				case string(k) == "id":
					dst = &id
				case string(k) == "name":
					dst = &name
				case string(k) == "arguments":
					args = content[vs:ve] // the last one wins
					continue
				case !plainKey(k) || foldsToAny(k, blockKeys):
					return false
				default:
					continue
				}
				if !decodeString(content[vs:ve], dst) {
					return false
				}
			}
			fn(typ, id, name, args)
			i = it.end()
		default:
			return false
		}
		i = skipSpace(content, i)
		if content[i] == ',' {
			i = skipSpace(content, i+1)
		}
	}
	return true
}

// ContentChars counts the characters of a message's text: the runes of
// content when it is a string, else of the "text" of each of its blocks,
// as decoding it with encoding/json into a string, else into
// []struct{ Text string }, and counting would (0 when neither decodes).
// content must be valid JSON, as the Decoder returns it. The text is
// counted where it lies, not copied: a prompt of 200 MB would otherwise
// cost 200 MB more for as long as it takes to count it.
func ContentChars(content []byte) int {
	if n, ok := contentChars(content); ok {
		return n
	}
	return contentCharsJSON(content)
}

// contentChars is ContentChars for the shapes it reads exactly as
// encoding/json; ok is false for the others (see ToolCalls).
func contentChars(content []byte) (n int, ok bool) {
	i := skipSpace(content, 0)
	if i >= len(content) {
		return 0, false
	}
	switch content[i] {
	case 'n': // null: an empty string, and no blocks
		return 0, true
	case '"':
		return stringChars(content[i+1 : skipString(content, i+1)-1]), true
	case '[':
	default:
		return 0, false
	}
	i = skipSpace(content, i+1)
	for content[i] != ']' {
		switch content[i] {
		case 'n': // null: a block with no text
			i += len("null")
		case '{':
			text := 0
			it := iterObject(content, i)
			for {
				k, vs, ve, more := it.next()
				if !more {
					break
				}
				switch {
				case string(k) == "text":
				case !plainKey(k) || Key(k, "text"):
					return 0, false
				default:
					continue
				}
				switch content[vs] {
				case 'n': // null leaves the text alone
				case '"':
					text = stringChars(content[vs+1 : ve-1]) // the last one wins
				default:
					return 0, false
				}
			}
			n += text
			i = it.end()
		default:
			return 0, false
		}
		i = skipSpace(content, i)
		if content[i] == ',' {
			i = skipSpace(content, i+1)
		}
	}
	return n, true
}

// stringChars counts the runes of a JSON string's body (between its
// quotes) once unescaped as encoding/json unescapes it: an escape is one
// rune, a surrogate pair of escapes one, a lone surrogate one U+FFFD.
func stringChars(s []byte) int {
	n := 0
	for {
		j := bytes.IndexByte(s, '\\')
		if j < 0 {
			return n + utf8.RuneCount(s)
		}
		n += utf8.RuneCount(s[:j]) + 1
		if s[j+1] != 'u' {
			s = s[j+2:]
			continue
		}
		r := hex4(s[j+2 : j+6])
		s = s[j+6:]
		if utf16.IsSurrogate(r) && len(s) >= 6 && s[0] == '\\' && s[1] == 'u' &&
			utf16.DecodeRune(r, hex4(s[2:6])) != unicode.ReplacementChar {
			s = s[6:]
		}
	}
}

// hex4 reads the four hex digits of a \u escape in valid JSON.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// contentCharsJSON is ContentChars by encoding/json.
func contentCharsJSON(content []byte) int {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return utf8.RuneCountInString(s)
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return 0
	}
	n := 0
	for _, b := range blocks {
		n += utf8.RuneCountInString(b.Text)
	}
	return n
}
