package event

import (
	"bytes"
	"encoding/json"
)

// Members and Elements walk JSON that has not been validated, such as
// the values inside a tool result or a child session file's lines, with
// the scanner's own skipString and skipValue: a value's end is found by
// searching for quotes, so a large string costs one pass of
// bytes.IndexByte. They read keys as encoding/json does after unescaping
// (matching a key to a field is the caller's), and report input they
// cannot walk as malformed rather than guessing.

// Members calls fn with each key and value of the object b, as long as fn
// returns true; it reports false when b is not a well-formed object. A key
// with escapes is handed over unescaped.
func Members(b []byte, fn func(key, v []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		ks := i
		kEnd := skipString(b, i+1)
		if kEnd < 0 {
			return false
		}
		key := b[i+1 : kEnd-1]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		vEnd := skipValue(b, i)
		if vEnd < 0 {
			return false
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if json.Unmarshal(b[ks:kEnd], &k) != nil {
				// Not reached for valid JSON; a key it cannot read is skipped.
				k = ""
			}
			key = []byte(k)
		}
		if !fn(key, b[i:vEnd]) {
			return true
		}
		i = skipSpace(b, vEnd)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		return i < len(b) && b[i] == '}' && skipSpace(b, i+1) == len(b)
	}
}

// Elements calls fn with each element of the array b, as long as fn
// returns true; it reports false when b is not a well-formed array.
func Elements(b []byte, fn func(v []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		vEnd := skipValue(b, i)
		if vEnd < 0 {
			return false
		}
		if !fn(b[i:vEnd]) {
			return true
		}
		i = skipSpace(b, vEnd)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		return i < len(b) && b[i] == ']' && skipSpace(b, i+1) == len(b)
	}
}
