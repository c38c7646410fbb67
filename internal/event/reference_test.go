package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/pi-otel/pi-otel/internal/testutil/benchutil"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
)

// referenceDecode and referencePeek are Decode and Peek as they were
// before the single-pass scanner, built on encoding/json alone. The fast
// decoder must give the same Event and the same error for every input.
func referenceDecode(rec []byte, opts Options) (Event, error) {
	typ, err := referencePeek(rec)
	if err != nil {
		return Event{}, err
	}
	// decodeSlow is the encoding/json path: the reference for the fields.
	ev, err := decodeSlow(rec, typ, opts)
	if err == nil || errors.Is(err, ErrFieldDropped) {
		referenceFacts(&ev)
	}
	if opts.BashCalls && (err == nil || errors.Is(err, ErrFieldDropped)) {
		ev.BashCalls = referenceBashCalls(&ev)
	}
	return ev, err
}

// referenceFacts reads the typed fields of rare records as the mapper read
// them from the raw ones, with encoding/json, before the decoder did.
func referenceFacts(ev *Event) {
	switch ev.Type {
	case TypeEntryAppended:
		var e struct {
			Type       string `json:"type"`
			CustomType string `json:"customType"`
		}
		if json.Unmarshal(ev.Entry, &e) == nil {
			ev.EntryType = e.Type
			if e.CustomType != "" {
				ev.EntryType += ":" + e.CustomType
			}
		}
	case TypeCompactionEnd:
		var c Compaction
		if len(ev.Result) > 0 && json.Unmarshal(ev.Result, &c) == nil {
			ev.Compaction = &c
		}
	}
	if m := ev.Message; m != nil {
		for _, raw := range append(append([]json.RawMessage{}, m.Tools...), m.ToolsAdded...) {
			var t struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			}
			if json.Unmarshal(raw, &t) == nil && t.Name != "" {
				m.ToolDefs = append(m.ToolDefs, ToolDef{Name: t.Name, Description: t.Description})
			}
		}
		if m.Role == "system" {
			m.Ordered = referenceSections(m.Raw)
		}
		if m.Role == "user" {
			m.TextChars = contentCharsJSON(m.Content) // encoding/json's count
		}
	}
}

// referenceSections reads a system message's sections in key order with
// encoding/json's tokenizer, as the mapper read them before the decoder did.
func referenceSections(raw []byte) []Section {
	var fields struct {
		Sections json.RawMessage `json:"sections"`
	}
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(fields.Sections))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var list []Section
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return list
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return list
		}
		list = append(list, Section{Name: name, Text: v})
	}
	return list
}

// referenceBashCalls reads an event's bash calls with encoding/json alone,
// block by block, as pi-otel read records before the decoder did.
func referenceBashCalls(ev *Event) []BashCall {
	type args struct {
		Command *string `json:"command"`
	}
	call := func(id, name string, raw json.RawMessage) (BashCall, bool) {
		var a args
		if name != "bash" || id == "" || json.Unmarshal(raw, &a) != nil || a.Command == nil {
			return BashCall{}, false
		}
		return BashCall{ID: id, Command: *a.Command}, true
	}
	switch {
	case ev.Type == TypeToolExecutionStart:
		if c, ok := call(ev.ToolCallID, ev.ToolName, ev.Args); ok {
			return []BashCall{c}
		}
	case (ev.Type == TypeMessageEnd || ev.Type == "message") && ev.Message != nil && ev.Message.Role == "assistant":
		var blocks []struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(ev.Message.Content, &blocks)
		var calls []BashCall
		for _, b := range blocks {
			if c, ok := call(b.ID, b.Name, b.Arguments); ok && b.Type == "toolCall" {
				calls = append(calls, c)
			}
		}
		return calls
	}
	return nil
}

func referencePeek(rec []byte) (string, error) {
	if !utf8.Valid(rec) {
		return "", ErrInvalidUTF8
	}
	if !json.Valid(rec) {
		return "", ErrInvalidJSON
	}
	i := skipSpace(rec, 0)
	if i >= len(rec) || rec[i] != '{' {
		return "", ErrNotObject
	}
	// Of duplicate keys the last wins, as in JSON.parse. This is written
	// out, not shared with headType: Peek falls back to headType, and the
	// reference must not share code with what it checks.
	var head struct {
		Type json.RawMessage `json:"type"`
	}
	var typ string
	if json.Unmarshal(rec, &head) != nil || json.Unmarshal(head.Type, &typ) != nil {
		return "", ErrNoType
	}
	return typ, nil
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// checkAgainstReference compares Peek, Decode and a Decoder with the
// reference, content capture off and on.
func checkAgainstReference(t *testing.T, rec []byte) {
	t.Helper()
	wantType, wantErr := referencePeek(rec)
	gotType, gotErr := Peek(rec)
	if gotType != wantType || errText(gotErr) != errText(wantErr) {
		t.Fatalf("Peek(%q) = %q, %v; reference %q, %v", truncated(rec), gotType, gotErr, wantType, wantErr)
	}
	for _, opts := range append([]Options{{}, {Content: true}, {BashCalls: true}, {Content: true, BashCalls: true}}, readerOptions...) {
		want, wantErr := referenceDecode(rec, opts)
		undeclare(&want, opts)
		got, gotErr := Decode(rec, opts)
		if errText(gotErr) != errText(wantErr) {
			t.Fatalf("Decode(%q, %+v) error %v; reference %v", truncated(rec), opts, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q, %+v):\n got %s\nwant %s", truncated(rec), opts, dump(got), dump(want))
		}
		d := NewDecoder(opts)
		for range 2 { // the second call reuses the storage
			gp, gotErr := d.Decode(rec)
			if errText(gotErr) != errText(wantErr) || !reflect.DeepEqual(*gp, want) {
				t.Fatalf("Decoder.Decode(%q, %+v):\n got %s, %v\nwant %s, %v", truncated(rec), opts, dump(*gp), gotErr, dump(want), wantErr)
			}
			checkMember(t, d, rec, wantErr)
		}
	}
}

// checkMember holds Decoder.Member to encoding/json: a member it reads is
// the value encoding/json reads for a field of that name.
func checkMember(t *testing.T, d *Decoder, rec []byte, decodeErr error) {
	t.Helper()
	var ref struct {
		ParentID json.RawMessage `json:"parentId"`
		Message  json.RawMessage `json:"message"`
	}
	refErr := json.Unmarshal(rec, &ref)
	for _, c := range []struct {
		name string
		want json.RawMessage
	}{{"parentId", ref.ParentID}, {"message", ref.Message}} {
		v, ok := d.Member(rec, c.name)
		if !ok {
			continue
		}
		if decodeErr != nil && !errors.Is(decodeErr, ErrFieldDropped) || refErr != nil {
			t.Fatalf("Member(%q, %q) ok for a record that is no object: %v, %v", truncated(rec), c.name, decodeErr, refErr)
		}
		if !bytes.Equal(v, c.want) || (v == nil) != (c.want == nil) {
			t.Fatalf("Member(%q, %q) = %q; encoding/json %q", truncated(rec), c.name, v, c.want)
		}
	}
	checkMessageMembers(t, d, rec, ref.Message)
}

func dump(ev Event) string {
	b, _ := json.Marshal(ev)
	s := fmt.Sprintf("%+v %s", ev, b)
	if ev.Message != nil {
		s += fmt.Sprintf(" message %+v", *ev.Message)
	}
	if ev.AssistantMessageEvent != nil {
		s += fmt.Sprintf(" ame %+v", *ev.AssistantMessageEvent)
	}
	return s
}

// captured is every record of every captured Pi stream, all versions, and
// both directions of the RPC captures.
func captured(t testing.TB) [][]byte {
	files, err := filepath.Glob(repo.Path("testdata/captures/*/*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no captures: %v", err)
	}
	var recs [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range bytes.Split(data, []byte("\n")) {
			if len(r) > 0 {
				recs = append(recs, r)
			}
		}
	}
	return recs
}

func TestDecodeMatchesReferenceOnCaptures(t *testing.T) {
	for _, rec := range captured(t) {
		checkAgainstReference(t, rec)
	}
}

func TestDecodeMatchesReferenceOnGeneratedStream(t *testing.T) {
	data, _ := streamgen.Generate(4<<20, streamgen.WithBigOutputs(50, 100<<10, 300<<10), streamgen.WithRetries(3), streamgen.WithCompactions(3))
	for _, rec := range streamgen.Records(data) {
		checkAgainstReference(t, rec)
	}
}

// oddRecords are shapes Pi does not write but a record may still have:
// each must decode exactly as encoding/json decodes it, whether the fast
// path takes it or hands it on.
var oddRecords = []string{
	`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":3}}`,
	`{"type":"message_update","assistantMessageEvent":null}`,
	`{"type":"message_update","assistantMessageEvent":"x"}`,
	`{"type":"message_update","assistantMessageEvent":[]}`,
	`{"type":"message_update","assistantMessageEvent":{"type":null,"contentIndex":null}}`,
	`{"type":"message_update","assistantMessageEvent":{"type":5}}`,
	`{"type":"message_update","assistantMessageEvent":{"contentIndex":1.5}}`,
	`{"type":"message_update","assistantMessageEvent":{"contentIndex":1e2}}`,
	`{"type":"message_update","assistantMessageEvent":{"contentIndex":-0}}`,
	`{"type":"message_update","assistantMessageEvent":{"contentIndex":99999999999999999999}}`,
	`{"type":"message_update","assistantMessageEvent":{"contentIndex":"1"}}`,
	`{"type":"message_update","assistantMessageEvent":{"type":"text\u005fdelta"}}`,
	`{"type":"message_update","assistantMessageEvent":{"Type":"a","type":"b"}}`,
	`{"type":"message_update","assistantMessageEvent":{"TYPE":"a"}}`,
	`{"type":"message_update","assistantMessageEvent":{"type":"a","type":"b"}}`,
	`{"type":"message_update","assistantMessageEvent":{"type":"a"},"assistantMessageEvent":{"contentIndex":2}}`,
	`{"type":"message_update","AssistantMessageEvent":{"type":"a"}}`,
	`{"type":"message_update","assistantmessageevent":{"type":"a"}}`,
	`{"type":"message_update","a\u0073sistantMessageEvent":{"type":"a"}}`,
	"{\"type\":\"message_update\",\"a\u017fsistantMessageEvent\":{\"type\":\"a\"}}",
	`{"type":"message_update","message":null,"assistantMessageEvent":{"type":"text_delta"}}`,
	`{"type":"message_update","message":{"role":"assistant"},"message":1}`,
	`{"type":"message_update","MESSAGE":{}}`,
	`{"type":"message_update","usage":{"input":"x"},"assistantMessageEvent":{"type":"text_delta","delta":"\ud83d\ude80 \ud800 x"}}`,
	`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":5}}`,
	`{"type":"agent_end","messages":[],"willRetry":null}`,
	`{"type":"agent_end","messages":null,"willRetry":true,"aborted":false}`,
	`{"type":"agent_end","messages":[1, "x" ,{"a":[]} , null],"willRetry":false}`,
	`{"type":"agent_end","messages":{}}`,
	`{"type":"agent_end","willRetry":"yes"}`,
	`{"type":"agent_end","willRetry":true,"willRetry":false}`,
	`{"type":"agent_end","WillRetry":true}`,
	`{"type":"tool_execution_end","toolCallId":"a","durationMs":{"ms":3}}`,
	`{"type":"tool_execution_end","toolCallId":"a","durationMs":null,"isError":null,"result":null}`,
	`{"type":"tool_execution_end","toolCallId":"a\"b\\c\n","isError":1}`,
	`{"type":"tool_execution_end","toolCallId":7}`,
	`{"type":"tool_execution_end","result":{"content":[{"type":"text","text":"a\"b"}]},"durationMs":1e400}`,
	`{"type":"tool_execution_end","durationMs":-1.5e-3,"toolcallid":"x"}`,
	`{"type":"session","version":3.0,"id":"x"}`,
	`{"type":"session","version":null,"id":null,"timestamp":"2026-01-01T00:00:00Z"}`,
	`{"type":"session","version":9223372036854775808}`,
	`{"type":"session_info_changed","name":null}`,
	`{"type":"session_info_changed","name":"n\u00e9"}`,
	`{"type":"session_info_changed","name":5}`,
	`{"type":"message_start","message":null}`,
	`{"type":"message_start","message":"hi"}`,
	`{"type":"message_start","message":[]}`,
	`{"type":"message_start","message":{}}`,
	`{"type":"message_end","message":{"role":"system","sections":{"a":"x","b":null,"c\u0041":"y"}}}`,
	`{"type":"message_end","message":{"role":"system","sections":{"a":"x","a":"y"},"toolsAdded":[],"tools":null}}`,
	`{"type":"message_end","message":{"role":"system","sections":{"a":1}}}`,
	`{"type":"message_end","message":{"role":"system","sections":[]}}`,
	`{"type":"message_end","message":{"role":"assistant","usage":{"input":1,"cost":{"total":0.5,"Total":1}}}}`,
	`{"type":"message_end","message":{"role":"assistant","usage":{"input":1.0}}}`,
	`{"type":"message_end","message":{"role":"assistant","usage":{"cost":null}}}`,
	// Keys that fold to a field across lengths: ſ for s, the Kelvin sign for k.
	`{"type":"message_end","message":{"role":"assistant","usage":{"input":1,"coſt":{"total":2},"cost":{"input":3}}}}`,
	`{"type":"message_end","message":{"role":"assistant","usage":{"cacheWrite":1,"totalToKens":4}}}`,
	`{"type":"message_end","message":{"role":"assistant","usage":null,"durationMs":null,"timestamp":null}}`,
	`{"type":"message_end","message":{"role":"assistant","Role":"user"}}`,
	`{"type":"message_end","message":{"role":"assistant","timestamp":"1"}}`,
	`{"type":"message_end","message":{"role":"assistant","Raw":"x","raw":1}}`,
	`{"type":"message_end","Message":{"role":"assistant"}}`,
	`{"type":"turn_end","message":{"role":5},"toolResults":[{}]}`,
	`{"type":"queue_update","steering":["a","b"],"followUp":[]}`,
	`{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"529"}`,
	`{"type":"auto_retry_start","attempt":1.5}`,
	`{"type":"auto_retry_end","success":true,"attempt":1,"finalError":null}`,
	`{"type":"extension_ui_request","id":"1","method":"select","timeout":1000,"data":{"x":1}}`,
	`{"type":"response","command":"get_state","data":null,"error":"x"}`,
	`{"type":"hologram_start","x":[1,2]}`,
	`{"x":1,"type":"turn_start"}`,
	`{"type":"a","type":"b"}`,
	`{"type":"a","type":null}`,
	`{"type":"a","type":3}`,
	`{"type":"a","Type":"b"}`,
	`{"Type":"b"}`,
	`{"TYPE":"b","x":1}`,
	`{"\u0074ype":"b"}`,
	`{"t\u0079pe":"b","type":"c"}`,
	`{"type":""}`,
	`{"type":"agent\u005fend","messages":[]}`,
	` { "type" : "agent_settled" , "aborted" : true } `,
	"{\"type\":\"x\",\"é\":1}",
	`{"type":"tool_execution_update","partialResult":{"content":[]},"args":{},"toolName":"bash"}`,
	`{"type":"compaction_end","result":null,"aborted":false,"willRetry":true,"errorMessage":"e\te"}`,
	`{"type":"entry_appended","entry":{"type":"context_edit"}}`,
	// The typed facts of rare records: entry types, compaction results,
	// tool declarations.
	`{"type":"entry_appended","entry":{"type":"custom","customType":"x","data":[1]}}`,
	`{"type":"entry_appended","entry":{"Type":"custom","customType":5}}`,
	`{"type":"entry_appended","entry":"custom"}`,
	`{"type":"compaction_end","result":{"summary":"s","tokensBefore":9,"estimatedTokensAfter":3,"usage":{"input":1,"cost":{"total":0.5}}}}`,
	`{"type":"compaction_end","result":{"summary":"s","tokensBefore":"9"}}`,
	`{"type":"compaction_end","result":"done"}`,
	`{"type":"tool_execution_end","result":{"summary":"s","tokensBefore":9}}`,
	`{"type":"message_end","message":{"role":"system","tools":[{"name":"a","description":"d"},{"name":""},5,{"NAME":"b"}],"toolsAdded":[{"name":"c","description":7}]}}`,
	`{"type":"message","message":{"role":"system","sections":{"a":"x"},"toolsAdded":[{"name":"c"}]}}`,
	`{"type":"message_end","message":{"role":"system","content":"c","sections":{"b":"1","a":null,"b":{"x":[1]},"\u0063":"e"},"Sections":{"z":"last"}}}`,
	`{"type":"message_end","message":{"role":"system","sections":[1],"content":null}}`,
	`{"type":"message_end","message":{"role":"system","sections":{"a":"1"},"sections":{"b":"2"}}}`,
	`{"type":"message_end","message":{"role":"system","section\u0073":{"a":"1"},"ſections":{"b":"2"}}}`,
	`{"type":"message_end","message":{"role":"user","sections":{"a":"x"}}}`,
	`{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"h\u00e9"},{"text":"x","text":"yz"}]}}`,
	`{"type":"message_start","message":{"role":"user","content":"hi","Content":[{"text":"abc"}]}}`,
	`{"type":"extension_error","extensionPath":"/x","event":"tool_call","error":"boom"}`,
	// Bash calls (Options.BashCalls), hostile ones too.
	`{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"ls -l"}}`,
	`{"type":"tool_execution_start","toolCallId":"","toolName":"bash","args":{"command":"ls"}}`,
	`{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":5}}`,
	`{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":null}}`,
	`{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"COMMAND":"a","command":"b"}}`,
	`{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"a","command":1}}`,
	`{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"comm\u0061nd":"a\n\u00e9"}}`,
	`{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":"ls"}`,
	`{"type":"tool_execution_start","toolCallId":"c1","toolName":"Bash","args":{"command":"ls"}}`,
	`{"type":"tool_execution_start","toolCallId":5,"toolName":"bash","args":{"command":"ls"}}`,
	`{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"make"}},{"type":"toolCall","id":"c2","name":"read","arguments":{"path":"x"}},{"type":"toolCall","name":"bash","arguments":{"command":"x"}},{"type":"toolCall","id":"c3","name":"bash","arguments":{"command":["x"]}},null,{"type":"toolCall","id":"c4","name":"bash","arguments":{"command":"a","command":"b"}}]}}`,
	`{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"x"},"arguments":null}]}}`,
	`{"type":"message_end","message":{"role":"assistant","content":[{"type":"t\u006folCall","id":"c1","name":"bash","arguments":{"command":"x"}}]}}`,
	`{"type":"message_end","message":{"role":"assistant","content":[{"Type":"toolCall","ID":"c1","NAME":"bash","Arguments":{"command":"x"}}]}}`,
	`{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":7,"name":"bash","arguments":{"command":"x"}},{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":"y"}}]}}`,
	`{"type":"message_end","message":{"role":"assistant","content":["toolCall",{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":"y"}}]}}`,
	`{"type":"message_end","message":{"role":"assistant","content":"toolCall"}}`,
	`{"type":"message_end","message":{"role":"user","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"x"}}]}}`,
	`{"type":"message","id":"e1","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"pwd"}}]}}`,
	`{"type":"message_start","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"pwd"}}]}}`,
	`{"type":"turn_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"pwd"}}]}}`,
}

func TestDecodeMatchesReferenceOnOddRecords(t *testing.T) {
	for _, rec := range oddRecords {
		checkAgainstReference(t, []byte(rec))
	}
	var many bytes.Buffer // more top-level members than the scan records
	many.WriteString(`{"type":"tool_execution_end"`)
	for i := range 40 {
		fmt.Fprintf(&many, `,"k%d":%d`, i, i)
	}
	many.WriteString(`,"toolCallId":"z"}`)
	checkAgainstReference(t, many.Bytes())
}

func FuzzDecodeMatchesReference(f *testing.F) {
	for _, rec := range oddRecords {
		f.Add([]byte(rec))
	}
	for _, rec := range captured(f) {
		if len(rec) < 4096 {
			f.Add(rec)
		}
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		checkAgainstReference(t, rec)
	})
}

// fastPath reports whether rec decodes without falling back to
// encoding/json.
func fastPath(rec []byte, opts Options) bool {
	var s scan
	typ, fast, err := peek(rec, &s)
	if err != nil || !fast {
		return false
	}
	var ev Event
	if typ == TypeMessageUpdate && !opts.Content {
		return s.decodeLite(rec, &ev, nil, false)
	}
	return s.decodeFull(rec, typ, &ev, false, nil)
}

// Every record Pi 1.6.0 writes, and every generated one, must take the
// fast path: a fallback would be correct but slow.
func TestFastPathCoversPiRecords(t *testing.T) {
	recs := captured(t)
	data, _ := streamgen.Generate(2<<20, streamgen.WithRetries(3), streamgen.WithCompactions(3))
	recs = append(recs, streamgen.Records(data)...)
	for _, rec := range recs {
		for _, content := range []bool{false, true} {
			if _, err := referenceDecode(rec, Options{Content: content}); err != nil {
				// RPC captures hold a malformed line and the controller's
				// commands, whose "message" is text: errors may be slow.
				continue
			}
			if !fastPath(rec, Options{Content: content}) {
				t.Errorf("content %v: slow path for %q", content, truncated(rec))
			}
		}
	}
	// And the odd shapes must not: they are what the fallback is for.
	for _, rec := range []string{`{"type":"a","Type":"b"}`, `{"type":"agent_end","willRetry":true,"willRetry":false}`, `{"type":"message_update","assistantMessageEvent":{"TYPE":"a"}}`} {
		if fastPath([]byte(rec), Options{}) {
			t.Errorf("fast path took %s", rec)
		}
	}
}

// Decode's Event owns its bytes, so a caller may keep it; the Decoder's
// raw fields are views of the record.
func TestDecodeCopiesDecoderAliases(t *testing.T) {
	src := `{"type":"tool_execution_end","toolCallId":"c","result":{"x":"abc"},"durationMs":1}`
	rec := []byte(src)
	ev, err := Decode(rec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := NewDecoder(Options{})
	dev, err := d.Decode(rec)
	if err != nil {
		t.Fatal(err)
	}
	copy(rec, bytes.Repeat([]byte("#"), len(rec)))
	if string(ev.Result) != `{"x":"abc"}` || ev.ToolCallID != "c" {
		t.Fatalf("Decode's event changed with the record: %s %q", ev.Result, ev.ToolCallID)
	}
	if dev.ToolCallID != "c" {
		t.Fatalf("the Decoder's strings must be copies, got %q", dev.ToolCallID)
	}
	if !bytes.HasPrefix(dev.Result, []byte("#")) {
		t.Fatalf("the Decoder copied the raw result %s; it should be a view", dev.Result)
	}
	if cap(dev.Result) != len(dev.Result) {
		t.Fatal("a view must be capped so appending cannot overwrite the record")
	}
}

// checkSequence decodes recs in order with one Decoder, whose scan
// remembers repeated values from record to record, and compares each with
// the reference.
func checkSequence(t *testing.T, recs [][]byte) {
	t.Helper()
	for _, opts := range append([]Options{{}, {Content: true}, {BashCalls: true}}, readerOptions...) {
		d := NewDecoder(opts)
		for _, rec := range recs {
			want, wantErr := referenceDecode(rec, opts)
			undeclare(&want, opts)
			got, gotErr := d.Decode(rec)
			if errText(gotErr) != errText(wantErr) || !reflect.DeepEqual(*got, want) {
				t.Fatalf("Decoder.Decode(%q, %+v) in sequence:\n got %s, %v\nwant %s, %v", truncated(rec), opts, dump(*got), gotErr, dump(want), wantErr)
			}
		}
	}
}

func TestDecoderSequenceMatchesReference(t *testing.T) {
	data, _ := streamgen.Generate(4<<20, streamgen.WithBigOutputs(50, 100<<10, 300<<10), streamgen.WithRetries(3), streamgen.WithCompactions(3))
	checkSequence(t, streamgen.Records(data))
	checkSequence(t, captured(t))

	// A remembered value followed by bytes that break the record, or that
	// continue the value, must not pass for the remembered one.
	usage := `{"input":200,"output":80,"cacheRead":1000,"cacheWrite":0,"reasoning":50,"totalTokens":1280}`
	ok := `{"type":"message_update","usage":` + usage + `,"assistantMessageEvent":{"type":"text_delta","contentIndex":0}}`
	var seq [][]byte
	for _, next := range []string{
		ok,
		`{"type":"message_update","usage":` + usage + `x,"assistantMessageEvent":{"type":"text_delta"}}`,
		`{"type":"message_update","usage":` + usage + `}`,
		`{"type":"message_update","usage":` + usage,
		`{"type":"message_update","usage":` + usage[:len(usage)-1] + `,"x":1}}`,
		`{"type":"message_update","usage":` + usage[:len(usage)-1],
		`{"type":"message_update","x":` + usage + `,"usage":` + usage + `}`,
		`{"type":"message_update","usage":` + usage + `,"usage":` + usage + `}`,
		`{"type":"message_update","usage":[` + usage + `]}`,
		`{"usage":` + usage + `,"type":"message_update"}`,
		"{\"type\":\"message_update\",\"usage\":" + usage + "\xff}",
		ok,
	} {
		seq = append(seq, []byte(ok), []byte(next))
	}
	checkSequence(t, seq)
}

func FuzzDecoderSequenceMatchesReference(f *testing.F) {
	usage := `{"input":200,"output":80,"cacheRead":1000,"cacheWrite":0,"reasoning":50,"totalTokens":1280}`
	f.Add([]byte(`{"type":"message_update","usage":`+usage+`}`), []byte(`{"type":"message_update","usage":`+usage+`,"x":[1]}`))
	recs := captured(f)
	for i := 0; i+1 < len(recs); i += 7 {
		if len(recs[i]) < 4096 && len(recs[i+1]) < 4096 {
			f.Add(recs[i], recs[i+1])
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		checkSequence(t, [][]byte{a, b, a, b})
	})
}

// BenchmarkReferenceDecodeStream is the encoding/json decoder this package
// used before, over the stream BenchmarkDecodeStream reads: the baseline
// for docs/performance.md.
func BenchmarkReferenceDecodeStream(b *testing.B) {
	data, _ := streamgen.Generate(32 << 20)
	recs := streamgen.Records(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for _, r := range recs {
			if _, err := referenceDecode(r, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	benchutil.ReportPerRecord(b, len(recs))
}
