package genaimsg

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/content/redact"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// mark shows in the expected JSON exactly which strings went through the
// scrubber.
func mark(s string) string { return "«" + s + "»" }

func raws(msgs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		out[i] = json.RawMessage(m)
	}
	return out
}

// Message shapes follow Pi's docs/message-types.md.
const (
	userString   = `{"role":"user","content":"Review this repository","timestamp":1733234401000}`
	userBlocks   = `{"role":"user","content":[{"type":"text","text":"What is in this picture?"},{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk","mimeType":"image/png"}],"timestamp":1}`
	assistantMsg = `{"role":"assistant","content":[{"type":"thinking","thinking":"Need to list files.","thinkingSignature":"c2lnbmF0dXJl"},{"type":"text","text":"Let me look.","textSignature":"x"},{"type":"toolCall","id":"call_abc123","name":"bash","arguments":{"command":"ls -la","timeout":30}}],"api":"openai-completions","provider":"fake","model":"m1","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":2}`
	toolResult   = `{"role":"toolResult","toolCallId":"call_abc123","toolName":"bash","content":[{"type":"text","text":"total 0"},{"type":"text","text":"README.md"}],"details":{"fullOutputPath":"/tmp/x"},"isError":false,"timestamp":3}`
	bashMsg      = `{"role":"bashExecution","command":"make test","output":"FAIL","exitCode":2,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/out","timestamp":4}`
	bashHidden   = `{"role":"bashExecution","command":"cat ~/.netrc","output":"secret stuff","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":5}`
	customMsg    = `{"role":"custom","customType":"lint-report","content":"3 warnings","display":true,"details":{"raw":"not sent to the model"},"timestamp":6}`
	branchMsg    = `{"role":"branchSummary","summary":"Tried approach A; it failed.","fromId":"e1","timestamp":7}`
	compactMsg   = `{"role":"compactionSummary","summary":"User wants tests fixed.","tokensBefore":50000,"timestamp":8}`
	systemMsg    = `{"role":"system","content":"You are Pi.","sections":{"preamble":"Be brief.","tools":"<tools>bash</tools>","old":null},"timestamp":0}`
)

func TestInputMessages(t *testing.T) {
	tests := []struct {
		name string
		msgs []string
		want string
	}{
		{"user string", []string{userString},
			`[{"role":"user","parts":[{"type":"text","content":"«Review this repository»"}]}]`},
		{"user text and image", []string{userBlocks},
			`[{"role":"user","parts":[{"type":"text","content":"«What is in this picture?»"},{"type":"image","modality":"image","mime_type":"«image/png»","size":45,"note":"image data not captured"}]}]`},
		{"assistant", []string{assistantMsg},
			`[{"role":"assistant","parts":[{"type":"reasoning","content":"«Need to list files.»"},{"type":"text","content":"«Let me look.»"},{"type":"tool_call","id":"call_abc123","name":"«bash»","arguments":{"command":"«ls -la»","timeout":30}}]}]`},
		{"tool result", []string{toolResult},
			`[{"role":"tool","parts":[{"type":"tool_call_response","id":"call_abc123","response":"«total 0\nREADME.md»"}]}]`},
		{"bash execution", []string{bashMsg},
			`[{"role":"user","parts":[{"type":"text","content":"«$ make test\nFAIL\n[exit code 2]\n[output truncated]»"}],"name":"bashExecution"}]`},
		{"bash execution excluded from context", []string{bashHidden}, `[]`},
		{"custom", []string{customMsg},
			`[{"role":"user","parts":[{"type":"text","content":"«3 warnings»"}],"name":"custom"}]`},
		{"summaries", []string{branchMsg, compactMsg},
			`[{"role":"user","parts":[{"type":"text","content":"«Tried approach A; it failed.»"}],"name":"branchSummary"},{"role":"user","parts":[{"type":"text","content":"«User wants tests fixed.»"}],"name":"compactionSummary"}]`},
		{"system", []string{systemMsg},
			`[{"role":"system","parts":[{"type":"text","content":"«You are Pi.»"},{"type":"text","content":"«Be brief.»","name":"«preamble»"},{"type":"text","content":"«<tools>bash</tools>»","name":"«tools»"},{"type":"section_removed","name":"«old»"}]}]`},
		{"unknown role keeps its content", []string{`{"role":"notification","content":[{"type":"text","text":"hi"}]}`},
			`[{"role":"«notification»","parts":[{"type":"text","content":"«hi»"}]}]`},
		{"unknown role without content", []string{`{"role":"marker","label":"x"}`},
			`[{"role":"«marker»","parts":[]}]`},
		{"missing role", []string{`{"content":"orphan"}`},
			`[{"role":"unknown","parts":[{"type":"text","content":"«orphan»"}]}]`},
		{"unknown and malformed blocks", []string{`{"role":"user","content":[{"type":"audio","text":"transcript","data":"AAAA"},{"type":"file"},42,{"text":"no type"}]}`},
			`[{"role":"user","parts":[{"type":"«audio»","content":"«transcript»"},{"type":"«file»"},{"type":"unknown"},{"type":"unknown","content":"«no type»"}]}]`},
		{"redacted thinking", []string{`{"role":"assistant","content":[{"type":"thinking","thinking":"","redacted":true,"thinkingSignature":"opaque"}],"stopReason":"stop"}`},
			`[{"role":"assistant","parts":[{"type":"reasoning","content":"«»","redacted":true}]}]`},
		{"tool call with invalid or missing arguments", []string{`{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":"{\"path\":"},{"type":"toolCall","id":"c2","name":"noop"}]}`},
			`[{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"«read»","arguments":"«{\"path\":»"},{"type":"tool_call","id":"c2","name":"«noop»","arguments":null}]}]`},
		{"wrongly typed fields are tolerated", []string{`{"role":"user","content":17}`, `{"role":["x"],"content":"y"}`},
			`[{"role":"user","parts":[]},{"role":"unknown","parts":[{"type":"text","content":"«y»"}]}]`},
		{"no messages", nil, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InputMessages(raws(tt.msgs...), mark)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
			checkMessages(t, got, false)
		})
	}
}

func TestInputMessagesRejectsNonObjects(t *testing.T) {
	for _, bad := range []string{`null`, `[1]`, `"text"`, `{"role":`} {
		if _, err := InputMessages(raws(userString, bad), mark); err == nil {
			t.Errorf("InputMessages accepted %s", bad)
		} else if !strings.Contains(err.Error(), "message 1") {
			t.Errorf("error %q does not name the message", err)
		}
	}
}

func TestOutputMessages(t *testing.T) {
	got, err := OutputMessages(raws(assistantMsg), mark)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"role":"assistant","parts":[{"type":"reasoning","content":"«Need to list files.»"},{"type":"text","content":"«Let me look.»"},{"type":"tool_call","id":"call_abc123","name":"«bash»","arguments":{"command":"«ls -la»","timeout":30}}],"finish_reason":"tool_call"}]`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	checkMessages(t, got, true)

	for stop, want := range map[string]string{
		"stop": "stop", "length": "length", "toolUse": "tool_call", "error": "error",
		"aborted": "aborted", "deferred": "deferred", "": "unknown",
	} {
		msg := `{"role":"assistant","content":[{"type":"text","text":"x"}],"stopReason":"` + stop + `"}`
		if stop == "" {
			msg = `{"role":"assistant","content":[]}`
		}
		got, err := OutputMessages(raws(msg), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, `"finish_reason":"`+want+`"`) {
			t.Errorf("stopReason %q: got %s, want finish_reason %q", stop, got, want)
		}
		checkMessages(t, got, true)
	}

	// A stop reason passed through is Pi's text, scrubbed; a mapped one is
	// the conventions' word.
	for stop, want := range map[string]string{"deferred": "«deferred»", "toolUse": "tool_call", "": "unknown"} {
		got, err := OutputMessages(raws(`{"role":"assistant","content":[],"stopReason":"`+stop+`"}`), mark)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(got, `"finish_reason":"`+want+`"`) {
			t.Errorf("stopReason %q, scrubbed: got %s, want finish_reason %q", stop, got, want)
		}
	}
}

func TestSystemInstructions(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"content and sections", systemMsg,
			`[{"type":"text","content":"«You are Pi.»"},{"type":"text","content":"«Be brief.»","name":"«preamble»"},{"type":"text","content":"«<tools>bash</tools>»","name":"«tools»"},{"type":"section_removed","name":"«old»"}]`},
		// Section order is the prompt order; a Go map would sort "b" first.
		{"section order kept", `{"role":"system","content":[{"type":"text","text":"A"},{"type":"note","text":"N"},{"type":"text","text":"B"}],"sections":{"zeta":"1","alpha":"2"}}`,
			`[{"type":"text","content":"«A»"},{"type":"«note»","content":"«N»"},{"type":"text","content":"«B»"},{"type":"text","content":"«1»","name":"«zeta»"},{"type":"text","content":"«2»","name":"«alpha»"}]`},
		// The shape Pi 1.6.0 emits: empty content, the prompt in sections.
		{"empty content", `{"role":"system","content":"","sections":{"preamble":"P","tools":"<tools>\n- read\n</tools>"},"timestamp":1}`,
			`[{"type":"text","content":"«P»","name":"«preamble»"},{"type":"text","content":"«<tools>\n- read\n</tools>»","name":"«tools»"}]`},
		{"bare string", `"You are Pi."`, `[{"type":"text","content":"«You are Pi.»"}]`},
		{"empty", ``, `[]`},
		{"null", `null`, `[]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SystemInstructions(json.RawMessage(tt.in), mark)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
			var parts []map[string]any
			if err := json.Unmarshal([]byte(got), &parts); err != nil {
				t.Fatal(err)
			}
			for _, p := range parts {
				checkPart(t, p)
			}
		})
	}
	if _, err := SystemInstructions(json.RawMessage(`[1,2]`), mark); err == nil {
		t.Error("SystemInstructions accepted an array")
	}
}

func TestToolArguments(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"order, numbers and HTML kept", `{"command":"a && b > out.txt","timeout":1e3,"flags":[true,null,"x"]}`,
			`{"command":"«a && b > out.txt»","timeout":1e3,"flags":[true,null,"«x»"]}`},
		{"credential keys hidden", `{"url":"https://x","headers":{"Authorization":"Bearer abc","X-Api-Key":"k1"},"password":12345,"credentials":{"user":"bob","pins":[1,"2"]},"max_tokens":10}`,
			`{"url":"«https://x»","headers":{"Authorization":"[REDACTED:authorization]","X-Api-Key":"[REDACTED:api-key]"},"password":"[REDACTED:password]","credentials":{"user":"[REDACTED:credential]","pins":["[REDACTED:credential]","[REDACTED:credential]"]},"max_tokens":10}`},
		{"unicode and escapes", `{"path":"caf\u00e9/\"q\".txt"}`, `{"path":"«café/\"q\".txt»"}`},
		{"scalar", `"just text"`, `"«just text»"`},
		{"invalid JSON is scrubbed as text", `{"command":`, `«{"command":»`},
		{"trailing data is scrubbed as text", `{} {}`, `«{} {}»`},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToolArguments(json.RawMessage(tt.in), mark); got != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestToolResult(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"pi result", `{"content":[{"type":"text","text":"line 1"},{"type":"text","text":"line 2"}],"details":{"secret":"not shown"}}`,
			"«line 1\nline 2»"},
		{"image noted without data", `{"content":[{"type":"text","text":"screenshot:"},{"type":"image","data":"QUJDRA==","mimeType":"image/png"}]}`,
			"«screenshot:\n[image image/png, about 6 bytes, image data not captured]»"},
		{"string content", `{"content":"plain"}`, "«plain»"},
		{"string result", `"done"`, "«done»"},
		{"other shape", `{"ok":true,"path":"/tmp/a"}`, `{"ok":true,"path":"«/tmp/a»"}`},
		{"null", `null`, ""},
		{"empty", ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ToolResult(json.RawMessage(tt.in), mark); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestNilScrubKeepsContent(t *testing.T) {
	got, err := InputMessages(raws(userString), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"role":"user","parts":[{"type":"text","content":"Review this repository"}]}]`; got != want {
		t.Fatalf("got %s", got)
	}
}

// TestImageDataNeverCaptured puts a large image everywhere an image can be.
func TestImageDataNeverCaptured(t *testing.T) {
	data := strings.Repeat("QUJD", 5000)
	img := `{"type":"image","data":"` + data + `","mimeType":"image/jpeg"}`
	msgs := raws(
		`{"role":"user","content":[`+img+`]}`,
		`{"role":"toolResult","toolCallId":"c","toolName":"read","content":[`+img+`],"isError":false}`,
		`{"role":"custom","customType":"x","content":[`+img+`],"display":false}`,
	)
	got, err := InputMessages(msgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := ToolResult(json.RawMessage(`{"content":[`+img+`]}`), nil)
	for _, out := range []string{got, res} {
		if strings.Contains(out, "QUJDQUJD") {
			t.Fatalf("image data captured: %.200s", out)
		}
		if !strings.Contains(out, "image/jpeg") {
			t.Fatalf("image not noted: %.200s", out)
		}
	}
}

// TestSecretsCorpusIsRedacted runs the shared secrets corpus through every
// converter with the real redactor: no secret may reach the output.
func TestSecretsCorpusIsRedacted(t *testing.T) {
	r, err := redact.New(redact.WithMaxLength(8192))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(repo.Path("internal/content/redact/testdata/secrets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		ctx, secret, _ := strings.Cut(sc.Text(), "\t")
		n++
		js, _ := json.Marshal(ctx)
		s := string(js)
		msgs := raws(
			`{"role":"user","content":`+s+`}`,
			`{"role":"assistant","content":[{"type":"thinking","thinking":`+s+`},{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":`+s+`}}],"stopReason":"toolUse"}`,
			`{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":`+s+`}],"isError":true}`,
			`{"role":"bashExecution","command":`+s+`,"output":`+s+`,"exitCode":1,"cancelled":false,"truncated":false}`,
			`{"role":"compactionSummary","summary":`+s+`,"tokensBefore":1}`,
		)
		in, err := InputMessages(msgs, r.String)
		if err != nil {
			t.Fatal(err)
		}
		out, err := OutputMessages(msgs[1:2], r.String)
		if err != nil {
			t.Fatal(err)
		}
		sys, err := SystemInstructions(json.RawMessage(`{"role":"system","content":`+s+`,"sections":{"a":`+s+`}}`), r.String)
		if err != nil {
			t.Fatal(err)
		}
		args := ToolArguments(json.RawMessage(`{"command":`+s+`}`), r.String)
		res := ToolResult(json.RawMessage(`{"content":[{"type":"text","text":`+s+`}]}`), r.String)
		// Compare against the JSON spelling too: a secret with quotes or
		// slashes is escaped inside the output.
		esc, _ := json.Marshal(secret)
		for name, got := range map[string]string{"input": in, "output": out, "system": sys, "arguments": args, "result": res} {
			if strings.Contains(got, secret) || strings.Contains(got, strings.Trim(string(esc), `"`)) {
				t.Errorf("%s: secret %q survived in %s", name, secret, got)
			}
		}
	}
	if n == 0 {
		t.Fatal("empty corpus")
	}
}

// checkMessages checks the structure the GenAI message schemas require.
func checkMessages(t *testing.T, js string, output bool) {
	t.Helper()
	var msgs []map[string]any
	if err := json.Unmarshal([]byte(js), &msgs); err != nil {
		t.Fatalf("not a JSON array of objects: %v", err)
	}
	for _, m := range msgs {
		if _, ok := m["role"].(string); !ok {
			t.Errorf("message without a string role: %v", m)
		}
		parts, ok := m["parts"].([]any)
		if !ok {
			t.Errorf("message without a parts array: %v", m)
		}
		if _, ok := m["finish_reason"].(string); ok != output {
			t.Errorf("finish_reason present=%v in %v", ok, m)
		}
		for _, p := range parts {
			pm, ok := p.(map[string]any)
			if !ok {
				t.Errorf("part is not an object: %v", p)
				continue
			}
			checkPart(t, pm)
		}
	}
}

func checkPart(t *testing.T, p map[string]any) {
	t.Helper()
	typ, ok := p["type"].(string)
	if !ok {
		t.Errorf("part without a string type: %v", p)
	}
	need := map[string][]string{
		"text":               {"content"},
		"reasoning":          {"content"},
		"tool_call":          {"name"},
		"tool_call_response": {"response"},
		"blob":               {"modality", "content"},
	}[typ]
	for _, field := range need {
		if _, ok := p[field]; !ok {
			t.Errorf("%s part without %s: %v", typ, field, p)
		}
	}
}

// FuzzConvert checks that any message JSON converts without panicking and
// that whatever comes out is valid JSON.
func FuzzConvert(f *testing.F) {
	for _, m := range []string{userString, userBlocks, assistantMsg, toolResult, bashMsg, customMsg, compactMsg, systemMsg} {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, m string) {
		for _, conv := range []func([]json.RawMessage, func(string) string) (string, error){InputMessages, OutputMessages} {
			if out, err := conv(raws(m), mark); err == nil && !json.Valid([]byte(out)) {
				t.Fatalf("invalid JSON %s from %s", out, m)
			}
		}
		if out, err := SystemInstructions(json.RawMessage(m), mark); err == nil && !json.Valid([]byte(out)) {
			t.Fatalf("invalid JSON %s from %s", out, m)
		}
		if out := ToolArguments(json.RawMessage(m), nil); json.Valid([]byte(m)) && !json.Valid([]byte(out)) {
			t.Fatalf("ToolArguments turned valid %s into invalid %s", m, out)
		}
		_ = ToolResult(json.RawMessage(m), mark)
	})
}
