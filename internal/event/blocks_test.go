package event_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-otel/pi-otel/internal/event"
)

// ToolCalls reads what encoding/json reads, or says it cannot.
func TestToolCallsAsEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		in       string
		fallback bool
	}{
		{in: `[]`},
		{in: ` [ ] `},
		{in: `[{"type":"text","text":"hi"}]`},
		{in: `[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls","type":"x"}}]`},
		{in: `[{"type":"thinking","thinking":"a \"toolCall\" [{"},{"type":"toolCall","id":"c1","name":"read"},{"type":"toolCall","name":"write","id":"c2"}]`},
		{in: `[ {"type" : "toolCall" , "id" : "c\u00e91" , "name" : "b\nash"} , null ]`},
		{in: `[{"type":"toolCall","id":"a","id":"b","name":null}]`},
		{in: `[{"type":"toolCall"},{"id":"x","name":"y"}]`},
		{in: "[" + strings.Repeat(`{"type":"toolCall","id":"c","name":"n"},{"type":"text"},`, 9) + `{"type":"toolCall","id":"z","name":"last"}]`},
		{in: `[{"Type":"toolCall","id":"c1","name":"bash"}]`, fallback: true},
		{in: `[{"t\u0079pe":"toolCall","id":"c1","name":"bash"}]`, fallback: true},
		{in: `[{"type":"toolCall","id":7,"name":"bash"}]`, fallback: true},
		{in: `["toolCall"]`, fallback: true},
		{in: `[[{"type":"toolCall"}]]`, fallback: true},
		{in: `"toolCall"`, fallback: true},
		{in: `{"type":"toolCall"}`, fallback: true},
	} {
		ids, names, ok := event.ToolCalls([]byte(c.in))
		if ok == c.fallback {
			t.Errorf("%s: ok = %v", c.in, ok)
			continue
		}
		if !ok {
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(c.in), &blocks); err != nil {
			t.Errorf("%s: fast path took what encoding/json refuses: %v", c.in, err)
			continue
		}
		var wantIDs, wantNames []string
		for _, b := range blocks {
			if b.Type == "toolCall" {
				wantIDs, wantNames = append(wantIDs, b.ID), append(wantNames, b.Name)
			}
		}
		if !slices.Equal(ids, wantIDs) || !slices.Equal(names, wantNames) {
			t.Errorf("%s: got %q %q, want %q %q", c.in, ids, names, wantIDs, wantNames)
		}
	}
}

// contentCharsRef is what ContentChars must equal: the text decoded with
// encoding/json, then counted.
func contentCharsRef(content []byte) int {
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

var contentCharsCases = []string{
	`null`, `""`, `"hi"`, ` "héllo" `, `"a\nb\"c\\d\/e\u00e9"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	`"\uD83D\uDE00"`, "\"\xff\xfe\"", `[]`, `[null]`, ` [ ] `,
	`[{"type":"text","text":"hi"},{"type":"image","data":"QUJD"},{"type":"text","text":"\u00e9\n"}]`,
	`[{"type":"thinking","thinking":"long"},{"type":"toolCall","id":"c","arguments":{"text":"nested"}}]`,
	`[{"text":"a"},null,{"text":null},{"text":"bc","text":null},{"text":"x","text":"yz"}]`,
	`[{"Text":"a"}]`, `[{"t\u0065xt":"a"}]`, `[{"tëxt":"a"}]`, `[{"text":1}]`, `[{"text":"a"},"b"]`,
	`[[{"text":"a"}]]`, `{"text":"a"}`, `7`, `true`,
}

// ContentChars counts what encoding/json decodes.
func TestContentCharsAsEncodingJSON(t *testing.T) {
	for _, c := range contentCharsCases {
		if got, want := event.ContentChars([]byte(c)), contentCharsRef([]byte(c)); got != want {
			t.Errorf("%s: %d characters, want %d", c, got, want)
		}
	}
}

func FuzzContentChars(f *testing.F) {
	for _, c := range contentCharsCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		if got, want := event.ContentChars(b), contentCharsRef(b); got != want {
			t.Fatalf("%q: %d characters, want %d", b, got, want)
		}
	})
}

// A huge prompt is counted in place: decoding it would allocate it again.
func TestContentCharsDoesNotCopy(t *testing.T) {
	text := strings.Repeat(`a line of the prompt, with \"quotes\" and \u00e9\n`, 1<<14)
	for _, c := range []string{`"` + text + `"`, `[{"type":"text","text":"` + text + `"}]`} {
		b := []byte(c)
		if n := testing.AllocsPerRun(10, func() { event.ContentChars(b) }); n != 0 {
			t.Errorf("%d allocations counting %d bytes", int(n), len(b))
		}
	}
}
