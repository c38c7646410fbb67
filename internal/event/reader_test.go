package event

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// readerOptions are the session reader's: they change where a message
// is decoded and what facts are read, not what is read.
var readerOptions = []Options{{Transient: true}, {Transient: true, NoDeclarations: true, BashCalls: true}}

// undeclare drops from the reference what NoDeclarations does not read.
func undeclare(ev *Event, opts Options) {
	if opts.NoDeclarations && ev.Message != nil {
		ev.Message.ToolDefs, ev.Message.Ordered = nil, nil
	}
}

// checkMessageMembers holds Decoder.MessageMembers to Members of the
// message encoding/json reads, want.
func checkMessageMembers(t *testing.T, d *Decoder, rec []byte, want json.RawMessage) {
	t.Helper()
	var got, ref []string
	if !d.MessageMembers(rec, func(k, v []byte) bool {
		if bytes.IndexByte(k, '\\') >= 0 { // as Members hands it over
			var s string
			if json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s) != nil {
				t.Fatalf("MessageMembers(%q): key %q", truncated(rec), k)
			}
			k = []byte(s)
		}
		got = append(got, string(k), string(v))
		return true
	}) {
		return
	}
	if !Members(want, func(k, v []byte) bool {
		ref = append(ref, string(k), string(v))
		return true
	}) || !slices.Equal(got, ref) {
		t.Fatalf("MessageMembers(%q) = %q; Members of %q: %q", truncated(rec), got, truncated(want), ref)
	}
}
