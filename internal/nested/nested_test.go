package nested

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
)

// assistant is a child's Pi message as the subagent extension hands it back.
func assistant(ts int64, dur float64, cost float64, stop string) map[string]any {
	return map[string]any{
		"role": "assistant", "timestamp": ts, "durationMs": dur, "stopReason": stop,
		"provider": "fake", "model": "fake-model",
		"content": []any{map[string]any{"type": "text", "text": "ok"}},
		"usage":   map[string]any{"input": 10, "output": 2, "totalTokens": 12, "cost": map[string]any{"total": cost}},
	}
}

func toolMsg(ts int64, dur float64, name string, isErr bool) map[string]any {
	return map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": name, "timestamp": ts, "durationMs": dur, "isError": isErr,
		"content": []any{map[string]any{"type": "text", "text": "out"}}}
}

func result(entries ...any) []byte {
	b, _ := json.Marshal(map[string]any{
		"content": []any{map[string]any{"type": "text", "text": "done"}},
		"details": map[string]any{"mode": "parallel", "results": entries},
	})
	return b
}

func TestParsesARunWithTimedItems(t *testing.T) {
	raw := result(map[string]any{
		"agent": "scout", "task": "look", "exitCode": 0, "stopReason": "stop", "model": "fake/fake-model",
		"usage": map[string]any{"input": 99, "cost": 9.0},
		"messages": []any{
			map[string]any{"role": "user", "timestamp": 1000, "content": "Task: look"},
			assistant(1010, 50, 0.25, "toolUse"),
			toolMsg(1080, 15, "bash", true),
			assistant(1090, 30, 0.5, "stop"),
		},
	})
	if !Probe(raw) {
		t.Fatal("Probe missed a subagent result")
	}
	r := Parse(raw, Limits{})
	if r == nil || len(r.Runs) != 1 || r.Mode != "parallel" || r.Dropped.Total() != 0 {
		t.Fatalf("got %+v", r)
	}
	run := r.Runs[0]
	if run.Agent != "scout" || run.Task != "look" || run.Depth != 1 || run.Failed() {
		t.Errorf("run %+v", run)
	}
	// The messages' usage, not the entry's, which has no cost breakdown.
	if run.Usage.Cost.Total != 0.75 || run.Usage.Input != 20 {
		t.Errorf("usage %+v, want the two model calls' sum", run.Usage)
	}
	if len(run.Items) != 3 {
		t.Fatalf("%d items, want chat, tool, chat", len(run.Items))
	}
	chat, tool := run.Items[0], run.Items[1]
	if chat.Kind != Chat || chat.Start.UnixMilli() != 1010 || chat.End.UnixMilli() != 1060 {
		t.Errorf("chat %v..%v, want 1010..1060 (timestamp, durationMs)", chat.Start.UnixMilli(), chat.End.UnixMilli())
	}
	if tool.Kind != Tool || tool.Start.UnixMilli() != 1065 || tool.End.UnixMilli() != 1080 || !tool.IsError || tool.ToolName != "bash" {
		t.Errorf("tool %+v, want bash 1065..1080 in error (its result's timestamp is its end)", tool)
	}
	if run.Start.UnixMilli() != 1000 || run.End.UnixMilli() != 1120 {
		t.Errorf("run %v..%v, want 1000..1120", run.Start.UnixMilli(), run.End.UnixMilli())
	}
	if got := r.Total().Cost.Total; got != 0.75 {
		t.Errorf("total cost %v", got)
	}
}

func TestNameAndFailure(t *testing.T) {
	for _, c := range []struct {
		entry  map[string]any
		agent  string
		failed bool
	}{
		{map[string]any{"type": "explorer", "messages": []any{}}, "explorer", false},
		{map[string]any{"messages": []any{}}, GenericAgent, false},
		{map[string]any{"agent": "a", "exitCode": 2, "messages": []any{}}, "a", true},
		{map[string]any{"agent": "a", "stopReason": "aborted", "messages": []any{}}, "a", true},
		{map[string]any{"agent": "a", "errorMessage": "boom", "messages": []any{}}, "a", true},
		// The last model call says how the child stopped when the entry does not.
		{map[string]any{"agent": "a", "messages": []any{assistant(1, 1, 0, "error")}}, "a", true},
	} {
		r := Parse(result(c.entry), Limits{})
		if r == nil || len(r.Runs) != 1 {
			t.Fatalf("%v: %+v", c.entry, r)
		}
		if r.Runs[0].Agent != c.agent || r.Runs[0].Failed() != c.failed {
			t.Errorf("%v: agent %q failed %v, want %q %v", c.entry, r.Runs[0].Agent, r.Runs[0].Failed(), c.agent, c.failed)
		}
	}
}

func TestPlainResultsCarryNothing(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"hello \"messages\": [] \"usage\""}],"details":{}}`,
		`{"content":[],"details":{"truncation":null}}`,
		`"a string"`,
		`[1,2]`,
		`null`,
	} {
		if r := Parse([]byte(raw), Limits{}); !r.Empty() {
			t.Errorf("%s: %+v, want nothing", raw, r)
		}
	}
	if Probe([]byte(`{"content":[{"type":"text","text":"say \"messages\" and \"usage\""}]}`)) {
		t.Error("Probe matched keys inside a string")
	}
}

func TestGenericFields(t *testing.T) {
	raw := `{"content":[],"usage":{"input":5,"output":1,"cost":{"total":0.01}},"nestedCalls":{"calls":[` +
		`{"id":"p/1","name":"read","status":"ok","durationMs":3},{"id":"p/2","name":"bash","status":"error","error":"exit 1"}],"complete":false}}`
	r := Parse([]byte(raw), Limits{})
	if r == nil || r.Usage == nil || r.Usage.Cost.Total != 0.01 || len(r.Calls) != 2 || r.CallsComplete {
		t.Fatalf("%+v", r)
	}
	if r.Calls[1].Status != "error" || r.Calls[0].DurationMs == nil || *r.Calls[0].DurationMs != 3 {
		t.Errorf("calls %+v", r.Calls)
	}
	// The tool's own usage covers its nested work: not added to it again.
	raw2 := result(map[string]any{"agent": "a", "messages": []any{assistant(1, 1, 0.5, "stop")}})
	var m map[string]any
	_ = json.Unmarshal(raw2, &m)
	m["usage"] = map[string]any{"cost": map[string]any{"total": 0.5}}
	raw2, _ = json.Marshal(m)
	if got := Parse(raw2, Limits{}).Total().Cost.Total; got != 0.5 {
		t.Errorf("total %v, want the tool's usage alone", got)
	}
}

// Each hostile input gets a bounded outcome, counted in Dropped, and the
// rest of the result is kept.
func TestHostileInput(t *testing.T) {
	good := map[string]any{"agent": "ok", "messages": []any{assistant(1000, 10, 0.1, "stop")}}
	t.Run("results without messages", func(t *testing.T) {
		r := Parse(result(map[string]any{"agent": "x"}, good, map[string]any{"agent": "y", "messages": "not a list"}), Limits{})
		if len(r.Runs) != 1 || r.Dropped.NoMessages != 2 {
			t.Errorf("%d runs, dropped %+v", len(r.Runs), r.Dropped)
		}
	})
	t.Run("unknown roles", func(t *testing.T) {
		r := Parse(result(map[string]any{"agent": "x", "messages": []any{
			map[string]any{"role": "alien", "timestamp": 5}, 42, assistant(1000, 10, 0.1, "stop"),
		}}), Limits{})
		if len(r.Runs) != 1 || len(r.Runs[0].Items) != 1 || r.Dropped.UnknownRoles != 2 || r.Dropped.Malformed != 1 {
			t.Errorf("items %d, dropped %+v", len(r.Runs[0].Items), r.Dropped)
		}
	})
	t.Run("10,000 results", func(t *testing.T) {
		entries := make([]any, 10000)
		for i := range entries {
			entries[i] = good
		}
		r := Parse(result(entries...), Limits{})
		if len(r.Runs) != DefaultLimits.MaxRuns || r.Dropped.Runs != 10000-DefaultLimits.MaxRuns {
			t.Errorf("%d runs, %d dropped", len(r.Runs), r.Dropped.Runs)
		}
	})
	t.Run("nesting 50 deep", func(t *testing.T) {
		inner := good
		for range 49 {
			tr := toolMsg(1000, 1, "subagent", false)
			tr["details"] = map[string]any{"results": []any{inner}}
			inner = map[string]any{"agent": "level", "messages": []any{assistant(1000, 1, 0.1, "toolUse"), tr}}
		}
		r := Parse(result(inner), Limits{})
		depth, runs := 0, 0
		r.Walk(func(run *Run) { runs++; depth = max(depth, run.Depth) })
		if depth != DefaultLimits.MaxDepth || runs != DefaultLimits.MaxDepth || r.Dropped.Deep != 1 {
			t.Errorf("depth %d, runs %d, dropped %+v", depth, runs, r.Dropped)
		}
		// What was kept still adds up: each kept level's cost, once.
		if got := r.Total().Cost.Total; fmt.Sprintf("%.2f", got) != fmt.Sprintf("%.2f", 0.1*float64(DefaultLimits.MaxDepth)) {
			t.Errorf("total %v", got)
		}
	})
	t.Run("out-of-order timestamps", func(t *testing.T) {
		r := Parse(result(map[string]any{"agent": "x", "messages": []any{
			assistant(5000, 10, 0, "toolUse"), toolMsg(1000, 20, "bash", false), assistant(3000, -5, 0, "stop"),
		}}), Limits{})
		run := r.Runs[0]
		if r.Dropped.Unordered != 1 || len(run.Items) != 3 {
			t.Fatalf("dropped %+v, %d items", r.Dropped, len(run.Items))
		}
		for _, it := range run.Items {
			if it.End.Before(it.Start) {
				t.Errorf("item ends before it starts: %+v", it)
			}
		}
		if !run.Start.Equal(time.UnixMilli(980)) || !run.End.Equal(time.UnixMilli(5010)) {
			t.Errorf("run %v..%v, want it to cover every message", run.Start.UnixMilli(), run.End.UnixMilli())
		}
	})
	t.Run("40 MB tool result", func(t *testing.T) {
		big := strings.Repeat("x", 40<<20)
		msg := toolMsg(1000, 1, "bash", false)
		msg["content"] = []any{map[string]any{"type": "text", "text": big}}
		raw := result(map[string]any{"agent": "x", "messages": []any{assistant(900, 10, 0.1, "toolUse"), msg}})
		// Read within the default bound; its text is skipped, not kept.
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := Parse(raw, Limits{})
		runtime.ReadMemStats(&after)
		if len(r.Runs) != 1 || len(r.Runs[0].Items) != 2 || r.Dropped.Total() != 0 {
			t.Errorf("%+v", r)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
			t.Errorf("parsing allocated %d bytes: the 40 MB text was copied", grew)
		}
		// Over a bound, left unread and counted.
		r = Parse(raw, Limits{MaxBytes: 32 << 20})
		if len(r.Runs) != 0 || r.Dropped.Oversize != 1 {
			t.Errorf("%d runs, dropped %+v: want the result left unread and counted", len(r.Runs), r.Dropped)
		}
	})
	t.Run("items and calls over the bounds", func(t *testing.T) {
		msgs := make([]any, 30)
		for i := range msgs {
			msgs[i] = assistant(int64(1000+i), 1, 0, "stop")
		}
		calls := make([]any, 10)
		for i := range calls {
			calls[i] = map[string]any{"id": fmt.Sprint(i), "name": "read", "status": "ok"}
		}
		b, _ := json.Marshal(map[string]any{"details": map[string]any{"results": []any{map[string]any{"agent": "x", "messages": msgs}}},
			"nestedCalls": map[string]any{"calls": calls, "complete": true}})
		r := Parse(b, Limits{MaxItems: 20, MaxCalls: 4})
		if len(r.Runs[0].Items) != 20 || r.Dropped.Items != 10 || len(r.Calls) != 4 || r.Dropped.Calls != 6 {
			t.Errorf("items %d calls %d dropped %+v", len(r.Runs[0].Items), len(r.Calls), r.Dropped)
		}
	})
	t.Run("fields of the wrong type", func(t *testing.T) {
		r := Parse([]byte(`{"details":{"results":[{"agent":7,"exitCode":"x","messages":[{"role":"assistant","timestamp":"soon","durationMs":5}]}]},"usage":"lots"}`), Limits{})
		if r == nil || len(r.Runs) != 1 || r.Dropped.Malformed < 3 {
			t.Errorf("%+v", r)
		}
	})
}

// Runs under another key than results, as tools built on the example name
// them, count as runs too.
func TestRunsUnderAnotherKey(t *testing.T) {
	b, _ := json.Marshal(map[string]any{"details": map[string]any{"agents": []any{
		map[string]any{"type": "reviewer", "messages": []any{assistant(1, 1, 0.2, "stop")}},
	}}})
	r := Parse(b, Limits{})
	if r == nil || len(r.Runs) != 1 || r.Runs[0].Agent != "reviewer" {
		t.Fatalf("%+v", r)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(result(map[string]any{"agent": "a", "messages": []any{assistant(1, 1, 0.1, "stop"), toolMsg(3, 1, "bash", true)}}))
	f.Add([]byte(`{"details":{"results":[{"messages":[{"role":"toolResult","details":{"results":[{"messages":[]}]}}]}]},"usage":{},"nestedCalls":{"calls":[{}]}}`))
	f.Add([]byte(`{"details":{"x":[{"messages":[1,"a",null,{"role":"assistant","timestamp":1e300,"durationMs":-1e300}]}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := Limits{MaxRuns: 16, MaxDepth: 4, MaxItems: 16, MaxCalls: 8, MaxBytes: 1 << 20}
		r := Parse(b, lim)
		if r == nil {
			return
		}
		runs := 0
		r.Walk(func(run *Run) {
			runs++
			if run.Depth < 1 || run.Depth > lim.MaxDepth || len(run.Items) > lim.MaxItems || run.Agent == "" {
				t.Fatalf("run out of bounds: %+v", run)
			}
			for _, it := range run.Items {
				if !it.Start.IsZero() && it.End.Before(it.Start) {
					t.Fatalf("item ends before it starts: %+v", it)
				}
			}
		})
		if runs > lim.MaxRuns || len(r.Calls) > lim.MaxCalls {
			t.Fatalf("%d runs, %d calls", runs, len(r.Calls))
		}
		// Probe reads compact JSON, as Pi writes it.
		var c bytes.Buffer
		if json.Compact(&c, b) == nil && bytes.Equal(c.Bytes(), b) && !Probe(b) && !r.Empty() {
			t.Fatalf("Probe said nothing, Parse found %+v", r)
		}
	})
}

// ReadSessionFile reads a Pi session file's messages and id, and refuses
// what is not one: a file without a session header, a directory, a file
// over the bound, a FIFO (which would block).
func TestReadSessionFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.jsonl", `{"type":"session","version":3,"id":"kid"}
{"type":"message","id":"a","message":{"role":"user","content":"x"}}
not json
{"type":"model_change","id":"b"}
{"type":"message","id":"c","message":{"role":"assistant","content":[]}}
`)
	read := ReadSessionFile(1 << 10)
	msgs, id, err := read(good)
	if err != nil || id != "kid" || len(msgs) != 2 {
		t.Fatalf("good file: %d messages, id %q, %v", len(msgs), id, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"no header": write("plain.jsonl", `{"type":"message","id":"a","message":{}}`+"\n"),
		"directory": dir,
		"too big":   write("big.jsonl", `{"type":"session","id":"k"}`+"\n"+strings.Repeat(" ", 2<<10)),
		"fifo":      fifo,
		"missing":   filepath.Join(dir, "gone.jsonl"),
	} {
		if _, _, err := read(path); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}

// walkedHeader is the header as SessionMessages read it before
// event.ReadHeader: its first non-blank line walked as its entries are.
func walkedHeader(b []byte) (id string, ok bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var typ string
		ok := event.Members(line, func(k, v []byte) bool {
			switch {
			case event.Key(k, "type"):
				_ = event.ReadString(v, &typ)
			case event.Key(k, "id"):
				_ = event.ReadString(v, &id)
			}
			return true
		})
		return id, ok && typ == "session"
	}
	return "", false
}

// FuzzSessionMessages: any bytes give messages that are JSON objects
// taken from the input, or an error; never a panic. The header is read
// as it was before event.ReadHeader.
func FuzzSessionMessages(f *testing.F) {
	f.Add([]byte(`{"type":"session","id":"k"}` + "\n" + `{"type":"message","message":{"role":"user"}}` + "\n"))
	f.Add([]byte(`{"type":"session"}` + "\n\n" + `{"type":"message","message":[]}` + "\n{"))
	f.Add([]byte("not json\n"))
	f.Add([]byte(`{"TYPE":"session","id":"a","Id":"b\u00e9","x":tru}` + "\r\n"))
	f.Add([]byte(`{"type":"session","id":5,"id":"\q"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, id, err := SessionMessages(b)
		if err != nil && len(msgs) > 0 {
			t.Fatalf("messages with an error")
		}
		if wantID, ok := walkedHeader(b); ok != (err == nil) || ok && id != wantID {
			t.Fatalf("header read as id %q, error %v; the walk read %q, %v", id, err, wantID, ok)
		}
		for _, m := range msgs {
			if len(m) == 0 || m[0] != '{' || !bytes.Contains(b, m) {
				t.Fatalf("message %q is no object of the input", m)
			}
		}
	})
}

// A details sessionFile with no results entry is a run of its own, read
// from the file; without a reader it is nothing.
func TestDetailsSessionFileAlone(t *testing.T) {
	res := []byte(`{"details":{"sessionFile":"/s/kid.jsonl"}}`)
	msgs := []json.RawMessage{json.RawMessage(`{"role":"assistant","usage":{"input":2,"cost":{"total":1}},"stopReason":"stop","timestamp":1000}`)}
	var asked string
	r := ParseWith(res, DefaultLimits, func(path string) ([]json.RawMessage, string, error) {
		asked = path
		return msgs, "kid", nil
	}, Origin{})
	if asked != "/s/kid.jsonl" || r == nil || len(r.Runs) != 1 {
		t.Fatalf("asked %q, result %+v", asked, r)
	}
	if run := r.Runs[0]; run.Agent != GenericAgent || run.Session != "kid" || run.Usage.Input != 2 || len(run.Items) != 1 {
		t.Errorf("run %+v", run)
	}
	if r := Parse(res, DefaultLimits); !r.Empty() {
		t.Errorf("without a reader: %+v", r)
	}
}

// A tool result a child's messages hold twice (one toolCallId, no model
// call between) is one tool item, counted as repeated, as the top level
// reads a session's own; a call id a later model call uses again is a
// new call.
func TestRepeatedToolResult(t *testing.T) {
	ask := func(ts int64, ids ...string) map[string]any {
		m := assistant(ts, 10, 0.1, "toolUse")
		var calls []any
		for _, id := range ids {
			calls = append(calls, map[string]any{"type": "toolCall", "id": id, "name": "bash"})
		}
		m["content"] = calls
		return m
	}
	answer := func(ts int64, id string) map[string]any {
		m := toolMsg(ts, 5, "bash", false)
		m["toolCallId"] = id
		return m
	}
	for _, c := range []struct {
		name            string
		msgs            []any
		tools, repeated int
	}{
		{"given again", []any{ask(1000, "c1"), answer(1020, "c1"), answer(1030, "c1"), assistant(1040, 10, 0.1, "stop")}, 1, 1},
		{"among parallel calls", []any{ask(1000, "c1", "c2"), answer(1020, "c1"), answer(1021, "c2"), answer(1022, "c1"), answer(1023, "c2"), assistant(1040, 10, 0.1, "stop")}, 2, 2},
		{"the id asked again", []any{ask(1000, "c1"), answer(1020, "c1"), ask(1030, "c1"), answer(1040, "c1"), assistant(1050, 10, 0.1, "stop")}, 2, 0},
		{"asked for by no call", []any{answer(1020, "x"), answer(1030, "x"), assistant(1040, 10, 0.1, "stop")}, 1, 1},
		{"given again after the answer", []any{ask(1000, "c1"), answer(1020, "c1"), assistant(1040, 10, 0.1, "stop"), answer(1020, "c1")}, 1, 1},
		{"given again after another call", []any{ask(1000, "c1"), answer(1020, "c1"), ask(1030, "c2"), answer(1040, "c2"), answer(1020, "c1"), assistant(1050, 10, 0.1, "stop")}, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Parse(result(map[string]any{"agent": "kid", "messages": c.msgs}), Limits{})
			tools := 0
			for _, it := range r.Runs[0].Items {
				if it.Kind == Tool {
					tools++
				}
			}
			if tools != c.tools || r.Dropped.Repeated != c.repeated || r.Dropped.Total() != 0 {
				t.Errorf("%d tool items, dropped %+v; want %d, %d repeated, nothing lost", tools, r.Dropped, c.tools, c.repeated)
			}
		})
	}
}

// TestFromEventReadsOnlyToolEnds: the stream's decode stage hands the
// mapper a tool_execution_end's runs, and nothing for other records or
// plain results.
func TestFromEventReadsOnlyToolEnds(t *testing.T) {
	raw := result(map[string]any{"agent": "scout", "messages": []any{assistant(1, 1, 0.1, "stop")}})
	end := &event.Event{Type: event.TypeToolExecutionEnd, Result: raw}
	if r := FromEvent(end); r == nil || len(r.Runs) != 1 || r.Runs[0].Agent != "scout" {
		t.Fatalf("FromEvent(tool end) = %s", describe(r))
	}
	for _, ev := range []*event.Event{
		{Type: event.TypeToolExecutionUpdate, PartialResult: raw, Result: raw},
		{Type: event.TypeToolExecutionEnd, Result: []byte(`{"content":[{"type":"text","text":"plain"}]}`)},
		{Type: event.TypeToolExecutionEnd},
	} {
		if r := FromEvent(ev); r != nil {
			t.Errorf("FromEvent(%s %s) = %s, want nil", ev.Type, ev.Result, describe(r))
		}
	}
}
