package session

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/pi-otel/pi-otel/internal/nested"
)

// A toolResult message's nestedCalls (the calls the tool made to other
// tools) are child execute_tool spans of its tool, counted in the root's
// tool calls; its usage (model work the tool did) counts on the tool span
// and in the root's totals.
func TestToolResultNestedCallsAndUsage(t *testing.T) {
	file := []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-01T10:00:01.000Z","message":{"role":"user","content":"go","timestamp":1796119201000}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"codemode","arguments":{}}],"provider":"p","model":"m","usage":{"input":10,"output":1,"cost":{"total":0.5}},"stopReason":"toolUse","timestamp":1796119201100,"durationMs":100}}
{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-12-01T10:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"codemode","content":[{"type":"text","text":"done"}],"isError":false,"timestamp":1796119201300,"durationMs":150,"usage":{"input":7,"output":2,"cost":{"total":0.25}},"nestedCalls":{"calls":[{"id":"c1/1","name":"read","status":"error","durationMs":3,"error":"ENOENT"},{"id":"c1/2","name":"bash","status":"ok","durationMs":20}],"complete":true}}}
{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-12-01T10:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m","usage":{"input":20,"output":1,"cost":{"total":1}},"stopReason":"stop","timestamp":1796119201400,"durationMs":50}}
`)
	roots := traceBytes(t, file, Config{}).roots
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	root := roots[0]
	tool := root.find("execute_tool codemode")
	if len(tool) != 1 {
		t.Fatalf("no codemode span")
	}
	calls := tool[0].children
	if len(calls) != 2 || calls[0].name() != "execute_tool read" || calls[1].name() != "execute_tool bash" {
		t.Fatalf("children of the tool: %d", len(calls))
	}
	if calls[0].str("pi.nested.call") != "true" || calls[0].s.Status().Code != codes.Error || calls[1].s.Status().Code == codes.Error {
		t.Errorf("read %v %v, bash %v", calls[0].str("pi.nested.call"), calls[0].s.Status(), calls[1].s.Status())
	}
	if d := calls[1].s.EndTime().Sub(calls[1].s.StartTime()).Milliseconds(); d != 20 {
		t.Errorf("bash lasts %d ms, want its durationMs 20", d)
	}
	if tool[0].str("pi.cost.total") != "0.25" || tool[0].str("gen_ai.usage.output_tokens") != "2" {
		t.Errorf("tool usage: cost %s out %s", tool[0].str("pi.cost.total"), tool[0].str("gen_ai.usage.output_tokens"))
	}
	if root.str("pi.cost.total") != "1.75" || root.str("pi.tool_calls") != "3" || root.str("pi.tool_errors") != "1" {
		t.Errorf("root cost %s tool calls %s errors %s, want 1.75, 3, 1", root.str("pi.cost.total"), root.str("pi.tool_calls"), root.str("pi.tool_errors"))
	}
}

// A results[] entry that names the child's session file is traced from
// that file, in place of the result's copy of the messages: the child's
// own record, counted once. A file that does not read leaves the copy.
func TestChildSessionFileReplacesTheCopy(t *testing.T) {
	child, parent := childAndParent(t, "")
	copyMsgs := `[{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":1,"output":1,"cost":{"total":8}},"stopReason":"stop","timestamp":1796119201300,"durationMs":200}]`
	read := Config{ChildSessions: nested.ReadSessionFile(1 << 20)}
	cases := []struct {
		name, results     string
		cfg               Config
		cost, session, in string
	}{
		{"file and copy", `[{"agent":"scout","sessionFile":"` + child + `","messages":` + copyMsgs + `}]`, read, "4", "child-1", "3"},
		{"file only", `[{"agent":"scout","sessionFile":"` + child + `"}]`, read, "4", "child-1", "3"},
		// The file named in details, for its lone entry.
		{"file in details", `[{"agent":"scout","messages":` + copyMsgs + `}],"sessionFile":"` + child + `"`, read, "4", "child-1", "3"},
		{"missing file", `[{"agent":"scout","sessionFile":"` + child + `.gone","messages":` + copyMsgs + `}]`, read, "10", "<none>", "1"},
		{"not read", `[{"agent":"scout","sessionFile":"` + child + `","messages":` + copyMsgs + `}]`, Config{}, "10", "<none>", "1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			roots := traceBytes(t, parent(c.results), c.cfg).roots
			if len(roots) != 1 {
				t.Fatalf("%d roots", len(roots))
			}
			agents := roots[0].find("invoke_agent scout")
			if len(agents) != 1 {
				t.Fatalf("%d invoke_agent spans", len(agents))
			}
			a := agents[0]
			if got := roots[0].str("pi.cost.total"); got != c.cost {
				t.Errorf("root cost %s, want %s", got, c.cost)
			}
			if got := a.str("pi.nested.session_id"); got != c.session {
				t.Errorf("session id %q, want %q", got, c.session)
			}
			if got := a.str("gen_ai.usage.input_tokens"); got != c.in {
				t.Errorf("child input tokens %s, want %s", got, c.in)
			}
			if len(a.find("chat m")) != 1 {
				t.Errorf("the child's chat span is missing")
			}
		})
	}
}

// childAndParent writes a child session file (whose header names
// parentHeader as its parentSession, when set) and returns its path and
// a parent session file with the subagent results given.
func childAndParent(t testing.TB, parentHeader string) (string, func(results string) []byte) {
	t.Helper()
	dir := t.TempDir()
	child := filepath.Join(dir, "2026-12-01T10-00-01-000Z_child-1.jsonl")
	hdr := ""
	if parentHeader != "" {
		hdr = `,"parentSession":"` + parentHeader + `"`
	}
	childFile := `{"type":"session","version":3,"id":"child-1","timestamp":"2026-12-01T10:00:01.000Z","cwd":"/p"` + hdr + `}
{"type":"message","id":"cu","parentId":null,"timestamp":"2026-12-01T10:00:01.200Z","message":{"role":"user","content":"look","timestamp":1796119201200}}
{"type":"message","id":"ca","parentId":"cu","timestamp":"2026-12-01T10:00:01.500Z","message":{"role":"assistant","content":[{"type":"text","text":"found"}],"provider":"p","model":"m","usage":{"input":3,"output":4,"cost":{"total":2}},"stopReason":"stop","timestamp":1796119201300,"durationMs":200}}
`
	if err := os.WriteFile(child, []byte(childFile), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := func(results string) []byte {
		return []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-01T10:00:00.100Z","message":{"role":"user","content":"go","timestamp":1796119200100}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T10:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"subagent","arguments":{}}],"provider":"p","model":"m","usage":{"input":10,"output":1,"cost":{"total":1}},"stopReason":"toolUse","timestamp":1796119200200,"durationMs":100}}
{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-12-01T10:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"subagent","content":[{"type":"text","text":"found"}],"details":{"mode":"single","results":` + results + `},"isError":false,"timestamp":1796119202000,"durationMs":1900}}
{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-12-01T10:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m","usage":{"input":20,"output":1,"cost":{"total":1}},"stopReason":"stop","timestamp":1796119202100,"durationMs":50}}
`)
	}
	return child, parent
}

// A child session file traced on its own links its first run's root to
// the parent's tool span, found in the parent's file; with NestedOnce
// (watch, which sees both) it is not traced on its own at all.
func TestChildSessionLinksToTheParentTool(t *testing.T) {
	parentPath := filepath.Join(t.TempDir(), "2026-12-01T10-00-00-000Z_s1.jsonl")
	child, parent := childAndParent(t, parentPath)
	childBytes, err := os.ReadFile(child)
	if err != nil {
		t.Fatal(err)
	}
	read := nested.ReadSessionFile(1 << 20)
	find := NewParentTools(1 << 20)

	// Not named by its parent (the result names no file): no link.
	if err := os.WriteFile(parentPath, parent(`[{"agent":"scout","messages":[]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	roots := traceBytes(t, childBytes, Config{ParentTools: find}).roots
	if len(roots) != 1 || len(roots[0].s.Links()) != 0 {
		t.Fatalf("unnamed child: %d roots, links %v", len(roots), roots[0].s.Links())
	}

	p := parent(`[{"agent":"scout","sessionFile":"` + child + `"}]`)
	if err := os.WriteFile(parentPath, p, 0o644); err != nil {
		t.Fatal(err)
	}
	tools := traceBytes(t, p, Config{ChildSessions: read}).roots[0].find("execute_tool subagent")
	if len(tools) != 1 {
		t.Fatalf("%d subagent tool spans", len(tools))
	}
	want := tools[0].s.SpanContext()

	roots = traceBytes(t, childBytes, Config{ParentTools: find}).roots
	if len(roots) != 1 {
		t.Fatalf("%d roots", len(roots))
	}
	links := roots[0].s.Links()
	if len(links) != 1 || !links[0].SpanContext.Equal(want) {
		t.Fatalf("links %v, want one to the tool span %v", links, want)
	}
	if a := links[0].Attributes; len(a) != 1 || a[0].Value.AsString() != "parent_tool" {
		t.Errorf("link attributes %v", a)
	}

	tr := traceBytes(t, childBytes, Config{ParentTools: find, NestedOnce: true})
	if len(tr.roots) != 0 || tr.tracer.Stats().Nested != 1 {
		t.Errorf("NestedOnce: %d roots, %d nested", len(tr.roots), tr.tracer.Stats().Nested)
	}
	// The link is computed: a child traced on its own read the parent's
	// file (grouping its runs, not tracing them) once for the unnamed
	// child and once for the named one, whose tool a read notes: its
	// second lookup reads nothing.
	if n := find.Reads(); n != 2 {
		t.Errorf("%d reads of the parent's file, want 2", n)
	}

	// Watch traces the parent too: what it noted there needs no read.
	seen := NewParentTools(1 << 20)
	tools = traceBytes(t, p, Config{ChildSessions: read, ParentTools: seen}).roots[0].find("execute_tool subagent")
	roots = traceBytes(t, childBytes, Config{ParentTools: seen}).roots
	if len(tools) != 1 || len(roots) != 1 || len(roots[0].s.Links()) != 1 || !roots[0].s.Links()[0].SpanContext.Equal(tools[0].s.SpanContext()) {
		t.Fatalf("after the parent: %d tools, %d roots, want a link to the tool", len(tools), len(roots))
	}
	if n := seen.Reads(); n != 0 {
		t.Errorf("%d reads of a parent already traced, want none", n)
	}
}

// A relative sessionFile is found in the folder of the session file that
// names it, not in pi-otel's directory: the child is traced once, nested
// below the tool, and (with NestedOnce, as watch runs) not again on its
// own. With no file (a session on stdin) it resolves against the
// header's cwd.
func TestRelativeChildSessionFile(t *testing.T) {
	dir := t.TempDir()
	parentPath := filepath.Join(dir, "2026-12-01T10-00-00-000Z_s1.jsonl")
	child, parent := childAndParent(t, parentPath)
	// childAndParent's child sits in a folder of its own: move it beside
	// the parent, as Pi's subagent tools write them.
	moved := filepath.Join(dir, filepath.Base(child))
	if err := os.Rename(child, moved); err != nil {
		t.Fatal(err)
	}
	p := parent(`[{"agent":"scout","sessionFile":"` + filepath.Base(moved) + `"}]`)
	if err := os.WriteFile(parentPath, p, 0o644); err != nil {
		t.Fatal(err)
	}
	read := nested.ReadSessionFile(1 << 20)
	// From another directory, and by a relative path, as `pi-otel replay
	// d/file` is run.
	t.Chdir(filepath.Dir(dir))
	stdin := bytes.Replace(p, []byte(`"cwd":"/p"`), []byte(`"cwd":"`+dir+`"`), 1)
	for name, c := range map[string]struct {
		b   []byte
		cfg Config
	}{
		"by path":          {p, Config{ChildSessions: read, Path: parentPath}},
		"by relative path": {p, Config{ChildSessions: read, Path: filepath.Join(filepath.Base(dir), filepath.Base(parentPath))}},
		"stdin":            {stdin, Config{ChildSessions: read}},
	} {
		agents := traceBytes(t, c.b, c.cfg).roots[0].find("invoke_agent scout")
		if len(agents) != 1 || agents[0].str("pi.nested.session_id") != "child-1" || len(agents[0].find("chat m")) != 1 {
			t.Errorf("%s: %d invoke_agent spans, want one read from the child's file", name, len(agents))
		}
	}
	// Neither a file nor a cwd to resolve against: the name is not read.
	if agents := traceBytes(t, p, Config{ChildSessions: read}).roots[0].find("invoke_agent scout"); len(agents) != 0 {
		t.Errorf("read a relative name against pi-otel's directory")
	}
	childBytes, err := os.ReadFile(moved)
	if err != nil {
		t.Fatal(err)
	}
	tr := traceBytes(t, childBytes, Config{ChildSessions: read, Path: moved, ParentTools: NewParentTools(1 << 20), NestedOnce: true})
	if len(tr.roots) != 0 || tr.tracer.Stats().Nested != 1 {
		t.Errorf("the child on its own: %d roots, %d nested; want it left to its parent's trace", len(tr.roots), tr.tracer.Stats().Nested)
	}
}

// A session file whose tool result names the file itself, or a child
// that names it back, ends at once: the cycle is not followed, and it is
// counted on the tool span and the root (pi.nested.dropped).
func TestChildSessionFileCycles(t *testing.T) {
	dir := t.TempDir()
	parentPath := filepath.Join(dir, "2026-12-01T10-00-00-000Z_s1.jsonl")
	_, parent := childAndParent(t, "")
	back := filepath.Join(dir, "back.jsonl")
	for name, c := range map[string]struct {
		named  string // what the parent's result names
		nested int    // invoke_agent spans
	}{
		"itself, by path":          {parentPath, 0},
		"itself, by relative path": {filepath.Base(parentPath), 0},
		"through a child":          {back, 1},
	} {
		p := parent(`[{"agent":"scout","sessionFile":"` + c.named + `"}]`)
		// The child is the parent's file under another id, naming the
		// parent: a cycle of two.
		b := bytes.Replace(parent(`[{"agent":"scout","sessionFile":"`+parentPath+`"}]`), []byte(`"id":"s1"`), []byte(`"id":"back"`), 1)
		for path, data := range map[string][]byte{parentPath: p, back: b} {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		done := make(chan traced, 1)
		go func() {
			done <- traceBytes(t, p, Config{ChildSessions: nested.ReadSessionFile(1 << 20), Path: parentPath})
		}()
		var tr traced
		select {
		case tr = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: tracing did not end", name)
		}
		if len(tr.roots) != 1 {
			t.Fatalf("%s: %d roots", name, len(tr.roots))
		}
		root := tr.roots[0]
		if n := len(root.find("invoke_agent scout")); n != c.nested {
			t.Errorf("%s: %d invoke_agent spans, want %d:\n%s", name, n, c.nested, root.shape())
		}
		tool := root.find("execute_tool subagent")[0]
		if tool.str("pi.nested.dropped") != "1" || root.str("pi.nested.dropped") != "1" {
			t.Errorf("%s: pi.nested.dropped %s on the tool, %s on the root; want the cycle counted once",
				name, tool.str("pi.nested.dropped"), root.str("pi.nested.dropped"))
		}
	}
}

// A child's messages that hold one tool result twice give one execute_tool
// span below the child, as a session's own repeated result does at the top,
// and count in Stats.Repeated alike.
func TestRepeatedNestedToolResult(t *testing.T) {
	_, parent := childAndParent(t, "")
	call := `{"role":"assistant","content":[{"type":"toolCall","id":"k1","name":"bash","arguments":{}}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cost":{"total":1}},"stopReason":"toolUse","timestamp":1796119200300,"durationMs":10}`
	res := `{"role":"toolResult","toolCallId":"k1","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":1796119200400,"durationMs":50}`
	again := strings.Replace(res, "1796119200400", "1796119200500", 1)
	answer := `{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"p","model":"m","usage":{"input":1,"output":1,"cost":{"total":1}},"stopReason":"stop","timestamp":1796119200600,"durationMs":10}`
	for name, c := range map[string]struct {
		msgs     []string
		repeated int64
	}{
		"once":  {[]string{call, res, answer}, 0},
		"twice": {[]string{call, res, again, answer}, 1},
	} {
		tr := traceBytes(t, parent(`[{"agent":"scout","messages":[`+strings.Join(c.msgs, ",")+`]}]`), Config{})
		agents := tr.roots[0].find("invoke_agent scout")
		if len(agents) != 1 {
			t.Fatalf("%s: %d invoke_agent spans", name, len(agents))
		}
		if n := len(agents[0].find("execute_tool bash")); n != 1 {
			t.Errorf("%s: %d execute_tool bash spans below the child, want 1:\n%s", name, n, agents[0].shape())
		}
		if got := tr.tracer.Stats().Repeated; got != c.repeated {
			t.Errorf("%s: %d repeated, want %d", name, got, c.repeated)
		}
		if got := agents[0].str("pi.tool_calls"); got != "1" {
			t.Errorf("%s: the child's pi.tool_calls %s, want 1", name, got)
		}
	}
}

// withChildResultReissued is a real Pi file (subagent-single: a child
// that runs bash and answers) with the child's last tool result given
// again after its final answer, as four real files hold it (a batch call
// traced as 1.90 s and then 0 s).
func withChildResultReissued(t *testing.T) []byte {
	t.Helper()
	var out [][]byte
	found := false
	for line := range bytes.Lines(readCapture(t, "pi-1.6.0", "subagent-single.jsonl")) {
		var e map[string]any
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		msg, _ := e["message"].(map[string]any)
		details, _ := msg["details"].(map[string]any)
		results, _ := details["results"].([]any)
		for _, r := range results {
			run := r.(map[string]any)
			msgs := run["messages"].([]any)
			last := -1
			for i, m := range msgs {
				if m.(map[string]any)["role"] == "toolResult" {
					last = i
				}
			}
			if last < 0 || msgs[len(msgs)-1].(map[string]any)["stopReason"] != "stop" {
				t.Fatal("the capture's child no longer ends with a tool result and then its answer")
			}
			run["messages"] = append(msgs, msgs[last])
			found = true
		}
		if found && len(results) > 0 {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			line = append(b, '\n')
		}
		out = append(out, line)
	}
	if !found {
		t.Fatal("no child messages in the capture")
	}
	return bytes.Join(out, nil)
}

// A child's last tool result given again after its final answer is the
// same result: one execute_tool span below the child, in the session
// file and in the stream alike (one rule at every depth).
func TestChildResultReissuedAfterItsAnswer(t *testing.T) {
	file := withChildResultReissued(t)
	tr := traceBytes(t, file, Config{})
	agents := tr.roots[0].find("invoke_agent")
	var child *node
	for _, a := range agents {
		if a != tr.roots[0] {
			child = a
		}
	}
	if child == nil {
		t.Fatalf("no child run:\n%s", tr.roots[0].shape())
	}
	if n := len(child.find("execute_tool bash")); n != 1 {
		t.Errorf("%d execute_tool bash spans below the child, want 1:\n%s", n, child.shape())
	}
	if got := child.str("pi.tool_calls"); got != "1" {
		t.Errorf("the child's pi.tool_calls %s, want 1", got)
	}
	if got := tr.tracer.Stats().Repeated; got != 1 {
		t.Errorf("%d repeated, want 1", got)
	}
}

// At the top level the same: a tool result written again after the model
// call that followed it is the result given again, not a new call.
func TestResultReissuedAfterTheNextCall(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	f.assistant("toolUse", usage{100, 10}, "bash:c1")
	f.result("c1", false)
	f.assistant("stop", usage{200, 20})
	f.result("c1", false)
	tr := traceBytes(t, f.bytes(), Config{})
	if n := len(tr.roots[0].find("execute_tool bash")); n != 1 {
		t.Errorf("%d execute_tool bash spans, want 1:\n%s", n, tr.roots[0].shape())
	}
	if got := tr.tracer.Stats().Repeated; got != 1 {
		t.Errorf("%d repeated, want 1", got)
	}
}

// One read of a parent's file serves the children it names before the
// one asked for: subagents run side by side look their tool up once.
func TestParentReadNotesSiblings(t *testing.T) {
	parentPath := filepath.Join(t.TempDir(), "2026-12-01T10-00-00-000Z_s1.jsonl")
	child, parent := childAndParent(t, parentPath)
	sibling := filepath.Join(filepath.Dir(child), "2026-12-01T10-00-01-000Z_child-2.jsonl")
	if err := os.WriteFile(sibling, []byte(`{"type":"session","version":3,"id":"child-2","timestamp":"2026-12-01T10:00:01.000Z","cwd":"/p"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	results := `[{"agent":"a","sessionFile":"` + sibling + `"},{"agent":"b","sessionFile":"` + child + `"}]`
	if err := os.WriteFile(parentPath, parent(results), 0o644); err != nil {
		t.Fatal(err)
	}
	find := NewParentTools(1 << 20)
	a, okA := find.Find(parentPath, "child-1")
	b, okB := find.Find(parentPath, "child-2")
	if !okA || !okB || !a.Equal(b) {
		t.Fatalf("child-1 %v %v, child-2 %v %v: want both run by the one tool", a, okA, b, okB)
	}
	if n := find.Reads(); n != 1 {
		t.Errorf("%d reads of the parent's file, want 1", n)
	}
}
