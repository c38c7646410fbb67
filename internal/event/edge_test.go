package event

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// decodeAll decodes rec every way a caller can, so that each answer is
// checked.
func decodeAll(t *testing.T, rec string) []Event {
	t.Helper()
	ev, err := Decode([]byte(rec), Options{})
	d, derr := NewDecoder(Options{}).Decode([]byte(rec))
	if errText(err) != errText(derr) {
		t.Fatalf("Decode error %v, Decoder error %v", err, derr)
	}
	return []Event{ev, *d}
}

// TestDuplicateKeysTakeTheLast: as JSON.parse (what Pi and its tools read)
// and encoding/json do.
func TestDuplicateKeysTakeTheLast(t *testing.T) {
	rec := `{"type":"agent_start","toolName":"x","type":"tool_execution_start","toolCallId":"a","toolName":"y"}`
	for _, ev := range decodeAll(t, rec) {
		if ev.Type != TypeToolExecutionStart || ev.ToolName != "y" || ev.ToolCallID != "a" {
			t.Errorf("got type %q tool %q id %q, want the last of each", ev.Type, ev.ToolName, ev.ToolCallID)
		}
	}
	if typ, err := Peek([]byte(rec)); typ != TypeToolExecutionStart || err != nil {
		t.Errorf("Peek = %q, %v", typ, err)
	}
	// A last "type" that is not a string leaves no type, as JSON.parse sees it.
	if _, err := Peek([]byte(`{"type":"agent_start","type":3}`)); !errors.Is(err, ErrNoType) {
		t.Errorf("a trailing non-string type: %v, want ErrNoType", err)
	}
}

// TestOutOfRangeNumberDropsOnlyItsField: 1e999 fits no Go number; the
// record keeps every other field, and the error says a field was dropped.
func TestOutOfRangeNumberDropsOnlyItsField(t *testing.T) {
	for _, tc := range []struct {
		name, rec string
		check     func(Event) bool
	}{
		{"tool duration", `{"type":"tool_execution_end","toolCallId":"a","toolName":"bash","durationMs":1e999,"isError":true}`,
			func(ev Event) bool {
				return ev.Type == TypeToolExecutionEnd && ev.ToolName == "bash" && ev.ToolCallID == "a" && ev.IsError && ev.DurationMs == nil
			}},
		{"retry attempt", `{"type":"auto_retry_start","attempt":1e999,"maxAttempts":3,"errorMessage":"529"}`,
			func(ev Event) bool { return ev.Attempt == 0 && ev.MaxAttempts == 3 && ev.ErrorMessage == "529" }},
		{"usage", `{"type":"message_end","message":{"role":"assistant","model":"m","stopReason":"stop","usage":{"input":1e999,"output":3},"durationMs":5}}`,
			func(ev Event) bool {
				m := ev.Message
				return m != nil && m.Model == "m" && m.StopReason == "stop" && m.Usage != nil && m.Usage.Input == 0 && m.Usage.Output == 3 && *m.DurationMs == 5
			}},
		{"message duration", `{"type":"message_end","message":{"role":"assistant","model":"m","durationMs":-1e999}}`,
			func(ev Event) bool {
				return ev.Message != nil && ev.Message.Model == "m" && ev.Message.DurationMs == nil
			}},
		{"integer past int64", `{"type":"message_end","message":{"role":"assistant","model":"m","usage":{"input":99999999999999999999,"output":3}}}`,
			func(ev Event) bool { return ev.Message != nil && ev.Message.Usage.Output == 3 }},
		{"message not an object", `{"type":"message_end","message":"hello"}`,
			func(ev Event) bool {
				return ev.Type == TypeMessageEnd && ev.Message == nil && string(ev.RawMessage) == `"hello"`
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.rec), Options{})
			if !errors.Is(err, ErrFieldDropped) {
				t.Errorf("err %v, want ErrFieldDropped", err)
			}
			for _, ev := range decodeAll(t, tc.rec) {
				if !tc.check(ev) {
					t.Errorf("got %s", dump(ev))
				}
			}
			checkAgainstReference(t, []byte(tc.rec))
		})
	}
}

// A member the scan cannot read as encoding/json would (twice, in another
// case, escaped) is left to encoding/json; others are read in place.
func TestMemberDefersWhenUnsure(t *testing.T) {
	for _, tc := range []struct {
		rec, want string
		ok        bool
	}{
		{`{"type":"message","parentId":"a","message":{}}`, `"a"`, true},
		{`{"type":"message","message":{},"parentId":null}`, `null`, true},
		{`{"type":"message","message":{"parentId":"x"}}`, ``, true},
		{`{"type":"message","parentId":"a","parentId":"b"}`, ``, false},
		{`{"type":"message","ParentId":"a"}`, ``, false},
		{`{"type":"message","parent\u0049d":"a"}`, ``, false},
		{`{"type":"message","parentId":"a"`, ``, false},
	} {
		d := NewDecoder(Options{})
		_, _ = d.Decode([]byte(tc.rec))
		v, ok := d.Member([]byte(tc.rec), "parentId")
		if string(v) != tc.want || ok != tc.ok {
			t.Errorf("Member(%s) = %q, %v; want %q, %v", tc.rec, v, ok, tc.want, tc.ok)
		}
		checkAgainstReference(t, []byte(tc.rec))
	}
}

// A Decoder remembers the last value of fields that repeat; a value that
// only matches it before unescaping, or that changes, is decoded anew.
func TestDecoderRecentValues(t *testing.T) {
	var seq [][]byte
	for _, model := range []string{`"m"`, `"m"`, `"a\\nb"`, `"a\nb"`, `"a\\nb"`, `"a\u0062"`, `"ab"`, `null`, `""`, `"m"`} {
		seq = append(seq,
			[]byte(`{"type":"message_end","message":{"role":"assistant","api":`+model+`,"provider":`+model+`,"model":`+model+`,"responseModel":`+model+`,"thinkingLevel":`+model+`}}`),
			[]byte(`{"type":"tool_execution_start","toolCallId":"c","toolName":`+model+`}`),
			[]byte(`{"type":"message_end","message":{"role":"toolResult","toolName":`+model+`}}`))
	}
	checkSequence(t, seq)
	d := NewDecoder(Options{})
	var models []string
	for _, rec := range seq[:6] { // "m" twice: one string
		if ev, _ := d.Decode(rec); ev.Message != nil && ev.Message.Role == "assistant" {
			models = append(models, ev.Message.Model)
		}
	}
	if len(models) != 2 || models[1] != "m" || unsafe.StringData(models[0]) != unsafe.StringData(models[1]) {
		t.Errorf("models %q: not the remembered one", models)
	}
}

// Strings with escapes decode as encoding/json decodes them, those of one
// byte by unescape and \u escapes by encoding/json.
func TestDecodeStringEscapes(t *testing.T) {
	for _, v := range []string{
		`"a\nb"`, `"\"quoted\" \\ \/ \b\f\n\r\t"`, `"\\n"`, `"\\\\"`, `"x\\"`, `"\n"`, `"é\tü 😀\n"`,
		`"\u00e9\n"`, `"a\nb\u0041"`, `"\ud83d\ude00"`, `"\ud800"`, `"\\u0041"`, `"line\n` + strings.Repeat(`more \"text\"\n`, 50) + `"`,
	} {
		var want, got string
		if err := json.Unmarshal([]byte(v), &want); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if !decodeString([]byte(v), &got) || got != want {
			t.Errorf("decodeString(%s) = %q, want %q", v, got, want)
		}
	}
}

// A value cut after a backslash, which no scan of valid JSON gives but a
// caller might, is refused as encoding/json refuses it, not a panic.
func TestDecodeStringLoneBackslash(t *testing.T) {
	for _, v := range []string{`"a\"`, `"\"`, `"a\nb\"`} {
		var got string
		if decodeString([]byte(v), &got) {
			t.Errorf("decodeString(%s) = %q, want a refusal", v, got)
		}
	}
}

// Short decimals read without strconv are the float64s strconv reads.
func TestShortDecimalAsParseFloat(t *testing.T) {
	cases := []string{"0", "-0", "1", "0.5", "-0.25", "1.50", "0.00012", "0.050355", "1796448954354", "999999999999999",
		"0.999999999999999", "9007199254740993", "1234567890123456", "0.1", "0.3", "2.675", "1e5", "1.", "-", ""}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		digits := 1 + r.IntN(15)
		n := r.Uint64N(uint64(pow10[digits]))
		s := strconv.FormatUint(n, 10)
		if p := r.IntN(len(s) + 1); p > 0 && p < len(s) {
			s = s[:p] + "." + s[p:]
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		cases = append(cases, s)
	}
	for _, s := range cases {
		want, err := strconv.ParseFloat(s, 64)
		got, ok := shortDecimal([]byte(s))
		if ok && (err != nil || math.Float64bits(got) != math.Float64bits(want)) {
			t.Fatalf("shortDecimal(%q) = %v; strconv %v, %v", s, got, want, err)
		}
	}
}
