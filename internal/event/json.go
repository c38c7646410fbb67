package event

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
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

// The Read functions decode a value that Members or Elements handed over
// as encoding/json decodes it into a field when the JSON is valid, without
// validating it: null leaves dst, and a value of another kind reports
// false and leaves dst too, as encoding/json leaves a field it reports.
// The fast decoders read a valid record's numbers and booleans with them
// as well; its strings, whose escapes and UTF-8 the scan has checked,
// with decodeString.

// Key reports whether the key k names field, an ASCII name, as
// encoding/json matches them: exactly or as bytes.EqualFold does, which
// also folds across lengths (ſ to s, K to k), so k may be the longer.
func Key(k []byte, field string) bool {
	if len(k) == len(field) && string(k) == field {
		return true
	}
	return len(k) >= len(field) && bytes.EqualFold(k, []byte(field))
}

// ReadString decodes a string value into dst.
func ReadString(v []byte, dst *string) bool {
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

// ReadFloat decodes a number value into dst.
func ReadFloat(v []byte, dst *float64) bool { return readNumber(v, dst, parseFloat) }

// ReadInt decodes an integer value into dst. A fraction or an exponent is
// no integer to encoding/json either.
func ReadInt(v []byte, dst *int) bool {
	n := int64(*dst)
	if !readInt64(v, &n) || int64(int(n)) != n {
		return false
	}
	*dst = int(n)
	return true
}

func readInt64(v []byte, dst *int64) bool { return readNumber(v, dst, parseInt64) }

// readNumber reads a number with parse; null leaves dst. It is small
// enough to inline, with parse known, into the fast decoders.
func readNumber[T int64 | float64](v []byte, dst *T, parse func([]byte) (T, bool)) bool {
	if string(v) == "null" {
		return true
	}
	n, ok := parse(v)
	if ok {
		*dst = n
	}
	return ok
}

// ReadBool decodes a boolean value into dst.
func ReadBool(v []byte, dst *bool) bool {
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

// ReadPtr decodes a pointer field: null sets it to nil, any other value
// to a T that read fills, in storage at (cleared first) or, with at nil,
// a new one.
func ReadPtr[T any](v []byte, dst **T, read func([]byte, *T) bool, at *T) bool {
	if string(v) == "null" {
		*dst = nil
		return true
	}
	p := at
	if p == nil {
		p = new(T)
	} else {
		var zero T
		*p = zero
	}
	if !read(v, p) {
		return false
	}
	*dst = p
	return true
}

// ReadUsage decodes a usage object into u as into a new Usage: keys as Key
// matches them, the last of duplicates winning (cost objects merge). On
// false u may be partly filled: ReadPtr then leaves the field as it was.
func ReadUsage(v []byte, u *Usage) bool { return readUsage(v, u, false) }

// decodeUsage is ReadUsage for the fast decoders, which read a record
// exactly as encoding/json or not at all: strict, it refuses a key that
// may fold to a field as Key does not (plainKey).
func decodeUsage(v []byte, u *Usage) bool { return readUsage(v, u, true) }

func readUsage(v []byte, u *Usage, strict bool) bool {
	ok := true
	return Members(v, func(k, v []byte) bool {
		switch {
		case Key(k, "input"):
			ok = readInt64(v, &u.Input)
		case Key(k, "output"):
			ok = readInt64(v, &u.Output)
		case Key(k, "cacheRead"):
			ok = readInt64(v, &u.CacheRead)
		case Key(k, "cacheWrite"):
			ok = readInt64(v, &u.CacheWrite)
		case Key(k, "reasoning"):
			ok = readInt64(v, &u.Reasoning)
		case Key(k, "totalTokens"):
			ok = readInt64(v, &u.TotalTokens)
		case Key(k, "cost"):
			ok = readCost(v, &u.Cost, strict)
		case strict:
			ok = plainKey(k)
		}
		return ok
	}) && ok
}

// readCost decodes a usage's cost into c; null leaves it, and a second
// cost object is decoded over the first, as encoding/json merges them.
func readCost(v []byte, c *Cost, strict bool) bool {
	if string(v) == "null" {
		return true
	}
	ok := true
	return Members(v, func(k, v []byte) bool {
		switch {
		case Key(k, "input"):
			ok = ReadFloat(v, &c.Input)
		case Key(k, "output"):
			ok = ReadFloat(v, &c.Output)
		case Key(k, "cacheRead"):
			ok = ReadFloat(v, &c.CacheRead)
		case Key(k, "cacheWrite"):
			ok = ReadFloat(v, &c.CacheWrite)
		case Key(k, "total"):
			ok = ReadFloat(v, &c.Total)
		case strict:
			ok = plainKey(k)
		}
		return ok
	}) && ok
}
