package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// referenceValidity is what Peek checked before the single-pass scanner:
// utf8.Valid, then json.Valid, then an object at the top.
func referenceValidity(rec []byte) error {
	if !utf8.Valid(rec) {
		return ErrInvalidUTF8
	}
	if !json.Valid(rec) {
		return ErrInvalidJSON
	}
	if i := skipSpace(rec, 0); i >= len(rec) || rec[i] != '{' {
		return ErrNotObject
	}
	return nil
}

func scanValidity(rec []byte) error {
	var s scan
	if err := s.validate(rec); err != nil {
		return err
	}
	if !s.object {
		return ErrNotObject
	}
	return nil
}

// validityCases covers each rule of RFC 8259 that json.Valid enforces,
// UTF-8 edge cases, and the nesting limit.
var validityCases = []string{
	``, ` `, `{}`, ` {} `, "\t{}\r\n", `{`, `}`, `{}}`, `{} {}`, `{}x`, `[]`, `[1,2]`, `[1,]`, `[,1]`, `"s"`, `1`, `null`,
	`{"a":1}`, `{"a":1,}`, `{,"a":1}`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{a:1}`, `{'a':1}`, `{"a":1 "b":2}`,
	`{"a":[1,{"b":[true,false,null]}]}`, `{"a":tru}`, `{"a":truex}`, `{"a":nul}`, `{"a":fals}`, `{"a":True}`,
	`{"n":0}`, `{"n":-0}`, `{"n":01}`, `{"n":-}`, `{"n":1.}`, `{"n":.5}`, `{"n":1.5e}`, `{"n":1.5e+}`, `{"n":1e5}`,
	`{"n":1E-5}`, `{"n":-1.25e+10}`, `{"n":+1}`, `{"n":0x10}`, `{"n":1_0}`, `{"n":Infinity}`, `{"n":NaN}`,
	`{"s":"\""}`, `{"s":"\\"}`, `{"s":"\/"}`, `{"s":"\b\f\n\r\t"}`, `{"s":"\u00e9"}`, `{"s":"\u00E9"}`, `{"s":"\u00g9"}`,
	`{"s":"\u00e"}`, `{"s":"\ud800"}`, `{"s":"\x"}`, `{"s":"\'"}`, `{"s":"\`, `{"s":"abc`, "{\"s\":\"a\tb\"}", "{\"s\":\"a\x00b\"}",
	"{\"s\":\"a\x1fb\"}", "{\"s\":\"a\x7fb\"}", "{\"s\":\"é\"}", "{\"s\":\"\u2028\u2029\"}", "{\"s\":\"🚀\"}",
	"{\"s\":\"\xff\"}", "{\"s\":\"\xc3\"}", "{\"s\":\"\xc3(\"}", "{\"s\":\"\xc0\xaf\"}", "{\"s\":\"\xe0\x80\xaf\"}",
	"{\"s\":\"\xed\xa0\x80\"}", "{\"s\":\"\xf4\x90\x80\x80\"}", "{\"s\":\"\xf0\x8f\xbf\xbf\"}", "{\"s\":\"\xef\xbf\xbd\"}",
	"{\"s\":\"\xf4\x8f\xbf\xbf\"}", "\xff{}", "{}\xff", "{\"a\":1}\xc3", "{\"a\":\xc3\xa9}", "\xef\xbb\xbf{}",
	"{\"a\":1\x00}", "{\"a\"\n:\n1\n}", "{\"a\":\"0123456789abcdef0123456789\\\"abcdef\"}",
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	"{\"a\":" + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + "}",
	"{\"a\":" + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + "}",
	"{\"a\":" + strings.Repeat("{\"b\":", 70) + "1" + strings.Repeat("}", 70) + "}",
	"{\"a\":" + strings.Repeat("[{\"b\":", 70) + "1" + strings.Repeat("}]", 70) + "}",
	"{\"a\":" + strings.Repeat("[{\"b\":", 70) + "1" + strings.Repeat("]}", 70) + "}",
}

func TestValidateAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range validityCases {
		// Every case also runs with the string part at each offset of an
		// 8-byte word, since the scanner reads strings a word at a time.
		for pad := range 9 {
			rec := []byte(c)
			if strings.HasPrefix(c, `{"s":"`) {
				rec = []byte(`{"s":"` + strings.Repeat("p", pad) + c[len(`{"s":"`):])
			}
			want, got := referenceValidity(rec), scanValidity(rec)
			if !errors.Is(got, want) && !(got == nil && want == nil) {
				t.Fatalf("%q: scan says %v, encoding/json and utf8 say %v", truncated(rec), got, want)
			}
		}
	}
}

func TestValidateRecordsTopLevelMembers(t *testing.T) {
	rec := []byte(` { "type" : "x" , "n":[1,{"a":2}], "o":{"k":"v"},"e":"" } `)
	var s scan
	if err := s.validate(rec); err != nil || !s.object {
		t.Fatalf("validate: %v, object %v", err, s.object)
	}
	want := [][2]string{{"type", `"x"`}, {"n", `[1,{"a":2}]`}, {"o", `{"k":"v"}`}, {"e", `""`}}
	if s.n != len(want) || s.overflow {
		t.Fatalf("%d members (overflow %v), want %d", s.n, s.overflow, len(want))
	}
	for i, w := range want {
		m := s.members[i]
		if k, v := string(rec[m.keyStart:m.keyEnd]), string(rec[m.valStart:m.valEnd]); k != w[0] || v != w[1] {
			t.Fatalf("member %d = %q: %q, want %q: %q", i, k, v, w[0], w[1])
		}
	}
}

// The members of a record's message are recorded on the way, for the
// message's decoder; a message with more than fit, or given twice, or
// not an object, is walked again, and decodes the same either way.
func TestValidateRecordsMessageMembers(t *testing.T) {
	rec := []byte(`{"type":"message","message": { "role" : "user","content":[{"type":"text","text":"a\"}"}] ,"n":{"k":[1]}} }`)
	var s scan
	if err := s.validate(rec); err != nil || !s.msg.valid || s.msg.at != 1 {
		t.Fatalf("validate: %v, message sub %+v", err, s.msg)
	}
	want := [][2]string{{"role", `"user"`}, {"content", `[{"type":"text","text":"a\"}"}]`}, {"n", `{"k":[1]}`}}
	if s.msg.n != len(want) {
		t.Fatalf("%d members, want %d", s.msg.n, len(want))
	}
	for i, w := range want {
		m := s.msg.m[i]
		if k, v := string(rec[m.keyStart:m.keyEnd]), string(rec[m.valStart:m.valEnd]); k != w[0] || v != w[1] {
			t.Fatalf("member %d = %q: %q, want %q: %q", i, k, v, w[0], w[1])
		}
	}
	var many strings.Builder
	many.WriteString(`{"type":"message_end","message":{"role":"assistant"`)
	for i := range maxSub {
		fmt.Fprintf(&many, `,"x%d":%d`, i, i)
	}
	many.WriteString(`,"model":"m"}}`)
	for _, rec := range []string{
		many.String(),
		`{"type":"message_end","message":{"role":"user"},"message":{"role":"assistant","model":"m"}}`,
		`{"type":"message_end","message":{"role":"user"},"x":{"message":{"role":"assistant"}}}`,
		`{"type":"message_end","message":["role","user"]}`,
		`{"type":"message_end","message":{"role":"user","usage":{"input":1,"input":2}}}`,
	} {
		checkAgainstReference(t, []byte(rec))
	}
	if err := s.validate([]byte(many.String())); err != nil || s.msg.valid {
		t.Fatalf("a message of %d members recorded as valid: %v", maxSub+2, err)
	}
}

func FuzzValidate(f *testing.F) {
	for _, c := range validityCases {
		if len(c) < 1000 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		want, got := referenceValidity(rec), scanValidity(rec)
		if !errors.Is(got, want) && !(got == nil && want == nil) {
			t.Fatalf("%q: scan says %v, encoding/json and utf8 say %v", truncated(rec), got, want)
		}
	})
}

func truncated(b []byte) []byte {
	if len(b) > 200 {
		return append(b[:200:200], "…"...)
	}
	return b
}
