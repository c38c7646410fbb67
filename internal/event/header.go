package event

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// HeaderField names a string field of a Header, in Header.Mistyped.
type HeaderField uint8

const (
	FieldType HeaderField = 1 << iota
	FieldID
	FieldParentSession
	FieldTimestamp
	FieldCwd
	FieldProvider
	FieldModel
	FieldModelID
)

// headerKeys are the keys of the fields, in the order of HeaderField,
// then the version's.
var headerKeys = [...]string{"type", "id", "parentSession", "timestamp", "cwd", "provider", "model", "modelId", "version"}

// Header is the first line of a session file, {"type":"session",…}, as
// encoding/json reads it into a struct of these fields: of duplicate keys
// the last wins, keys match ignoring case, and a value of another kind
// leaves its field as it was. Every reader of a session file's first line
// reads it here, each keeping its own rule for a line that is damaged.
type Header struct {
	Type, ID, ParentSession, Timestamp, Cwd string
	// Version 1 headers carried the session's model.
	Provider, Model, ModelID string
	// Version is the format's version; 1, as Pi reads it, when the value
	// is missing, null or no whole number (which may also be a string).
	Version int
	// Object says the line is an object whose members Members walks: the
	// fields are read. Valid says it is valid JSON too (json.Valid), so
	// that the fields are exactly what encoding/json reads.
	Object, Valid bool
	// Mistyped marks the fields that met a value of another kind, for
	// which encoding/json reports an error.
	Mistyped HeaderField
}

// IsSession reports whether h is a session header.
func (h *Header) IsSession() bool { return h.Valid && h.Type == TypeSession }

// ReadHeader reads line, any line: a session file's first line may be an
// entry (a file without a header) or anything else.
func ReadHeader(line []byte) Header {
	h := Header{Version: 1}
	fields := [...]*string{&h.Type, &h.ID, &h.ParentSession, &h.Timestamp, &h.Cwd, &h.Provider, &h.Model, &h.ModelID}
	h.Object = Members(line, func(k, v []byte) bool {
		switch i := headerKey(k); {
		case i == len(fields):
			h.Version = version(v)
		case i >= 0 && !ReadString(v, fields[i]) && v[0] != '"':
			// A string it cannot unquote is not JSON, not of another kind.
			h.Mistyped |= 1 << i
		}
		return true
	})
	if !h.Object {
		return Header{Version: 1}
	}
	var s scan
	err := s.validate(line)
	// The scanner stops at bytes that are not UTF-8, which Pi never
	// writes and encoding/json reads (as U+FFFD): it says then.
	h.Valid = err == nil || err == ErrInvalidUTF8 && json.Valid(line)
	return h
}

// headerKey is the index in headerKeys of the key encoding/json matches
// k to, -1 for none: the same key, else one equal ignoring case as
// Unicode folds it (K, the Kelvin sign and k alike).
func headerKey(k []byte) int {
	for i, name := range headerKeys {
		if string(k) == name {
			return i
		}
	}
	for i, name := range headerKeys {
		if bytes.EqualFold(k, []byte(name)) {
			return i
		}
	}
	return -1
}

// version reads the version value v as Pi's header has it: a whole
// number, also as a string; any other value, and null, read as 1. (The
// quotes are trimmed from the raw value, escapes and all, as the decoder
// before this one did.)
func version(v []byte) int {
	if string(v) == "null" {
		return 1
	}
	n, err := strconv.Atoi(strings.Trim(string(v), `"`))
	if err != nil {
		return 1
	}
	return n
}
