package event

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
)

// bashCallsRef is what BashCalls must equal: content decoded with
// encoding/json, each bash call's arguments too.
func bashCallsRef(content []byte) []BashCall {
	return referenceBashCalls(&Event{Type: TypeMessageEnd, Message: &Message{Role: "assistant", Content: content}})
}

func TestBashCalls(t *testing.T) {
	huge := strings.Repeat("x", 8<<20)
	for _, c := range []struct {
		name, content string
		want          []BashCall
	}{
		{"two of four", `[{"type":"text","text":"two calls"},` +
			`{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"make","timeout":60}},` +
			`{"type":"toolCall","id":"c2","name":"read","arguments":{"path":"x","command":"not bash"}},` +
			`{"type":"toolCall","id":"c3","name":"bash","arguments":{"command":"go test\n./..."}}]`,
			[]BashCall{{"c1", "make"}, {"c3", "go test\n./..."}}},
		{"no id", `[{"type":"toolCall","name":"bash","arguments":{"command":"ls"}},{"type":"toolCall","id":"","name":"bash","arguments":{"command":"ls"}}]`, nil},
		{"id of another kind", `[{"type":"toolCall","id":1,"name":"bash","arguments":{"command":"ls"}}]`, nil},
		{"command of another kind", `[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":["ls"]}},{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":7}}]`, nil},
		{"no command", `[{"type":"toolCall","id":"c1","name":"bash","arguments":{}},{"type":"toolCall","id":"c2","name":"bash"},{"type":"toolCall","id":"c3","name":"bash","arguments":null}]`, nil},
		{"arguments as text", `[{"type":"toolCall","id":"c1","name":"bash","arguments":"{\"command\":\"ls\"}"}]`, nil},
		{"empty command", `[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":""}}]`, []BashCall{{"c1", ""}}},
		{"escapes", `[{"type":"toolCall","id":"c\u00e91","name":"bash","arguments":{"command":"echo \"\ud83d\ude80\" \\"}}]`, []BashCall{{"c\u00e91", "echo \"\U0001F680\" \\"}}},
		{"other tools", `[{"type":"toolCall","id":"c1","name":"Bash","arguments":{"command":"ls"}},{"type":"toolCall","id":"c2","name":"bash_ext","arguments":{"command":"ls"}},{"type":"tool_call","id":"c3","name":"bash","arguments":{"command":"ls"}}]`, nil},
		{"huge arguments", `[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"` + huge + `","other":"` + huge + `"}}]`, []BashCall{{"c1", huge}}},
		{"not blocks", `"toolCall"`, nil},
		{"not an array", `{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}`, nil},
		{"nothing", ``, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := BashCalls([]byte(c.content))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("BashCalls = %.80q, want %.80q", got, c.want)
			}
			if c.content != "" {
				if ref := bashCallsRef([]byte(c.content)); !reflect.DeepEqual(got, ref) {
					t.Errorf("BashCalls = %.80q, encoding/json reads %.80q", got, ref)
				}
			}
		})
	}
}

// The decoder reads the calls once, into the event, only when asked.
func TestDecodeBashCalls(t *testing.T) {
	rec := []byte(`{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}]}}`)
	for _, opts := range []Options{{}, {BashCalls: true}} {
		d := NewDecoder(opts)
		ev, err := d.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		var want []BashCall
		if opts.BashCalls {
			want = []BashCall{{"c1", "ls"}}
		}
		if !reflect.DeepEqual(ev.BashCalls, want) {
			t.Errorf("%+v: BashCalls = %q, want %q", opts, ev.BashCalls, want)
		}
		// The next record has its own.
		if ev, _ := d.Decode([]byte(`{"type":"agent_end","messages":[]}`)); ev.BashCalls != nil {
			t.Errorf("%+v: agent_end kept %q", opts, ev.BashCalls)
		}
	}
}

// Every assistant message Pi and the generator write reads without
// encoding/json.
func TestBashCallsFastPathCoversPi(t *testing.T) {
	data, _ := streamgen.Generate(2 << 20)
	recs := append(captured(t), streamgen.Records(data)...)
	n := 0
	for _, rec := range recs {
		ev, err := Decode(rec, Options{})
		if err == nil && ev.Type == TypeToolExecutionStart && ev.ToolName == BashTool {
			if _, _, exact := bashCommand(ev.Args); !exact {
				t.Errorf("slow arguments for %q", truncated(rec))
			}
		}
		if err != nil || ev.Message == nil || ev.Message.Role != "assistant" || !bytes.Contains(ev.Message.Content, []byte(`"toolCall"`)) {
			continue
		}
		n++
		if _, ok := bashCalls(ev.Message.Content); !ok {
			t.Errorf("slow path for %q", truncated(rec))
		}
	}
	if n == 0 {
		t.Fatal("no tool calls in the captures")
	}
}

func FuzzBashCalls(f *testing.F) {
	for _, s := range []string{
		`[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}]`,
		`[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"a","COMMAND":null}},null]`,
		`[{"type":"toolCall","id":"c1","id":null,"name":"bash","arguments":{"command":"a"},"arguments":{"command":"b"}}]`,
		`[{"type":"t\u006folCall","id":"c1","name":"bash","arguments":{"comm\u0061nd":"a"}}]`,
		`[1,{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":1}}]`,
		`"x"`, `null`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		if !json.Valid(content) || !utf8.Valid(content) {
			return // the decoder hands on valid JSON in UTF-8 only
		}
		got, want := BashCalls(content), bashCallsRef(content)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("BashCalls(%q) = %q; encoding/json reads %q", content, got, want)
		}
	})
}

func FuzzBashCommand(f *testing.F) {
	for _, s := range []string{`{"command":"ls"}`, `{"Command":"a","command":null}`, `{"command":"a","x":{"command":1}}`, `{"comm\u0061nd":"a"}`, `{"command":1,"command":"a"}`, `"ls"`, `null`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		if len(args) > 0 && (!json.Valid(args) || !utf8.Valid(args)) {
			return
		}
		var a struct {
			Command *string `json:"command"`
		}
		want, wantOK := "", json.Unmarshal(args, &a) == nil && a.Command != nil
		if wantOK {
			want = *a.Command
		}
		if got, ok := BashCommand(args); got != want || ok != wantOK {
			t.Fatalf("BashCommand(%q) = %q, %v; encoding/json reads %q, %v", args, got, ok, want, wantOK)
		}
	})
}
