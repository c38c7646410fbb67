package nested

import (
	"testing"

	"github.com/pi-otel/pi-otel/internal/event"
)

// A tool result none of whose members carries anything gives ParseWith
// nothing, so that a caller with the members at hand may skip it.
func FuzzMemberCarries(f *testing.F) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"hello \"messages\": [] \"usage\""}],"details":{}}`,
		`{"content":[],"details":{"truncation":null},"isError":false}`,
		`{"content":[],"usage":{"input":5}}`,
		`{"content":[],"Usage":{"input":5}}`,
		`{"content":[],"us\u0061ge":{"input":5}}`,
		`{"content":[],"usage":null,"nestedCalls":null}`,
		`{"content":[],"usage":"x"}`,
		`{"NESTEDCALLS":{"calls":[{"id":"a"}]}}`,
		`{"details":{"mode":"single","x":"messages"}}`,
		`{"details":{"mode":"single","results":[{"agent":"a","messages":[]}]}}`,
		`{"Details":{"results":[{"agent":"a","messages":[{"role":"assistant","timestamp":1}]}]}}`,
		`{"details":{"sessionFile":"/x.jsonl"}}`,
		`{"details":{"results":[]},"details":{"results":[{"messages":[{"role":"assistant"}]}]}}`,
		`{"dętails":{"results":[{"messages":[{"role":"assistant"}]}]}}`,
		`{"uſage":{"input":1}}`,
		`{}`,
	} {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		carries := false
		if !event.Members(b, func(k, v []byte) bool {
			carries = carries || MemberCarries(k, v)
			return true
		}) || carries {
			return
		}
		if r := ParseWith(b, DefaultLimits, nil, Origin{}); r != nil {
			t.Fatalf("%s: no member carries anything, ParseWith found %+v", b, r)
		}
	})
}
