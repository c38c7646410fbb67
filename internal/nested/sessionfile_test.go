package nested

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeSession writes a session file with id whose one tool result names
// next as its child's session file, with a copy of the child's messages
// when withCopy; it returns its path.
func writeSession(t *testing.T, path, id, next string, withCopy bool) string {
	t.Helper()
	entry := map[string]any{"agent": "kid", "sessionFile": next}
	if withCopy {
		entry["messages"] = []any{assistant(1200, 10, 0.5, "stop")}
	}
	call := assistant(1000, 10, 1, "toolUse")
	call["content"] = []any{map[string]any{"type": "toolCall", "id": "c1", "name": "subagent"}}
	res := toolMsg(1100, 50, "subagent", false)
	res["details"] = map[string]any{"results": []any{entry}}
	var b []byte
	for _, line := range []any{
		map[string]any{"type": "session", "version": 3, "id": id},
		map[string]any{"type": "message", "id": "m1", "message": call},
		map[string]any{"type": "message", "id": "m2", "message": res},
	} {
		l, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, l...), '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// parseQuickly parses res as a session's tool result, reading child files
// from this machine, and fails the test if it does not end within seconds:
// a cycle followed would not.
func parseQuickly(t *testing.T, res []byte) *Result {
	t.Helper()
	done := make(chan *Result, 1)
	go func() { done <- ParseWith(res, DefaultLimits, ReadSessionFile(1<<20), Origin{}) }()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the parse did not end: a cycle of session files was followed")
		return nil
	}
}

// chain lists the runs below r, outermost first, each the only run of the
// tool result of the one before, as "session id or copy@depth".
func chain(r *Result) []string {
	var got []string
	r.Walk(func(run *Run) {
		s := run.Session
		if s == "" {
			s = "copy"
		}
		got = append(got, fmt.Sprintf("%s@%d", s, run.Depth))
	})
	return got
}

// A session file that names itself is read once: naming it again is a
// cycle, not followed and counted; the entry's copy stands, as for a file
// that does not read, and without a copy there is no run.
func TestSessionFileNamingItself(t *testing.T) {
	for _, withCopy := range []bool{true, false} {
		dir := t.TempDir()
		a := filepath.Join(dir, "a.jsonl")
		writeSession(t, a, "a", a, withCopy)
		r := parseQuickly(t, result(map[string]any{"agent": "kid", "sessionFile": a}))
		want := "a@1 copy@2"
		if !withCopy {
			want = "a@1"
		}
		if got := chain(r); strings.Join(got, " ") != want {
			t.Errorf("copy %v: runs %v, want %s", withCopy, got, want)
		}
		// Counted once: an entry a cycle leaves without messages is not
		// also an entry without messages.
		if d := r.Dropped; d.Cycles != 1 || d.Total() != 1 || d.UnreadFiles != 0 {
			t.Errorf("copy %v: dropped %+v, want one cycle, in the total", withCopy, d)
		}
	}
}

// A cycle through two files, A names B names A, is cut where it closes,
// however the file is named: here through a symbolic link to A.
func TestSessionFileCycleOfTwo(t *testing.T) {
	dir := t.TempDir()
	a, b, link := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	writeSession(t, a, "a", b, false)
	for name, back := range map[string]string{"same path": a, "symbolic link": link} {
		writeSession(t, b, "b", back, false)
		r := parseQuickly(t, result(map[string]any{"agent": "kid", "sessionFile": a}))
		if got := strings.Join(chain(r), " "); got != "a@1 b@2" {
			t.Errorf("%s: runs %s, want a, then b, and no more", name, got)
		}
		if r.Dropped.Cycles != 1 {
			t.Errorf("%s: dropped %+v, want one cycle", name, r.Dropped)
		}
	}
	// Not a cycle: two siblings naming one file each read it.
	c := writeSession(t, filepath.Join(dir, "c.jsonl"), "c", filepath.Join(dir, "none.jsonl"), true)
	r := parseQuickly(t, result(map[string]any{"agent": "kid", "sessionFile": c}, map[string]any{"agent": "kid", "sessionFile": c}))
	if r.Dropped.Cycles != 0 || len(r.Runs) != 2 || r.Runs[0].Session != "c" || r.Runs[1].Session != "c" {
		t.Errorf("siblings: %d runs, dropped %+v", len(r.Runs), r.Dropped)
	}
}

// Past the depth bound no session file is read: the run is counted as too
// deep.
func TestSessionFilePastTheDepthBound(t *testing.T) {
	dir := t.TempDir()
	// A chain of distinct files, longer than the bound.
	name := func(i int) string { return filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i)) }
	for i := range DefaultLimits.MaxDepth + 3 {
		writeSession(t, name(i), fmt.Sprint(i), name(i+1), false)
	}
	var asked []string
	read := ReadSessionFile(1 << 20)
	r := ParseWith(result(map[string]any{"agent": "kid", "sessionFile": name(0)}), DefaultLimits,
		func(path string) ([]json.RawMessage, string, error) {
			asked = append(asked, path)
			return read(path)
		}, Origin{})
	if len(asked) != DefaultLimits.MaxDepth || len(chain(r)) != DefaultLimits.MaxDepth {
		t.Errorf("%d files read, %d runs, want %d", len(asked), len(chain(r)), DefaultLimits.MaxDepth)
	}
	if r.Dropped.Deep != 1 || r.Dropped.NoMessages != 0 || r.Dropped.Cycles != 0 {
		t.Errorf("dropped %+v, want the run past the bound counted as too deep", r.Dropped)
	}
}

// A relative sessionFile resolves against the folder of the file that
// names it: the origin's for the result's own names, the child's for the
// names in the child's messages; with no file, against Pi's cwd; with
// neither, it is not read, whatever pi-otel's own directory holds.
func TestRelativeSessionFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeSession(t, filepath.Join(dir, "sub", "kid.jsonl"), "kid", "grand.jsonl", false)
	writeSession(t, filepath.Join(dir, "sub", "grand.jsonl"), "grand", "none.jsonl", false)
	// A decoy where the grandchild's name would lead from the origin's folder.
	writeSession(t, filepath.Join(dir, "grand.jsonl"), "decoy", "none.jsonl", false)
	res := result(map[string]any{"agent": "kid", "sessionFile": "sub/kid.jsonl"})
	read := ReadSessionFile(1 << 20)
	for _, c := range []struct {
		name string
		from Origin
		want string
	}{
		{"from a file", Origin{File: filepath.Join(dir, "parent.jsonl"), Cwd: "/elsewhere"}, "kid@1 grand@2"},
		{"from stdin", Origin{Cwd: dir}, "kid@1 grand@2"},
		{"nowhere", Origin{}, ""},
		{"a cwd that is no path here", Origin{Cwd: `C:\Users\pi`}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ParseWith(res, DefaultLimits, read, c.from)
			if got := strings.Join(chain(r), " "); got != c.want {
				t.Errorf("runs %q, want %q", got, c.want)
			}
			if c.want == "" && (r.Dropped.UnreadFiles != 1 || r.Dropped.NoMessages != 1) {
				t.Errorf("dropped %+v, want the name unread", r.Dropped)
			}
		})
	}
	// pi-otel's own directory (the package's, in a test) is never asked.
	asked := false
	ParseWith(result(map[string]any{"agent": "kid", "sessionFile": "sessionfile.go"}), DefaultLimits,
		func(string) ([]json.RawMessage, string, error) { asked = true; return nil, "", nil }, Origin{})
	if asked {
		t.Errorf("a relative name with nothing to resolve it against was read")
	}
}

// A result that names the file it is in, by any spelling, is a cycle at
// once: the origin's file is the first on the read stack.
func TestResultNamingItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	self := writeSession(t, filepath.Join(dir, "self.jsonl"), "self", "self.jsonl", false)
	for _, name := range []string{self, "self.jsonl", "./sub/../self.jsonl"} {
		r := ParseWith(result(map[string]any{"agent": "kid", "sessionFile": name}), DefaultLimits, ReadSessionFile(1<<20), Origin{File: self})
		if len(chain(r)) != 0 || r.Dropped.Cycles != 1 {
			t.Errorf("%s: runs %v, dropped %+v, want one cycle and no run", name, chain(r), r.Dropped)
		}
	}
}

// SessionMessages cuts lines as the stream is cut: CRLF, blank and
// damaged lines, and a last line with no LF, whose message is a copy
// while the others are the file's own bytes.
func TestSessionMessagesLines(t *testing.T) {
	b := []byte("\r\n{\"type\":\"session\",\"id\":\"s1\"}\r\n  \n" +
		`{"type":"message","message":{"role":"user"}}` + "\r\n" +
		`{"type":"message","message":{"role":"assist` + "\n" +
		`{"type":"model_change"}` + "\n" +
		` {"type":"message","message":{"role":"assistant"}} `)
	msgs, id, err := SessionMessages(b)
	if err != nil || id != "s1" || len(msgs) != 2 {
		t.Fatalf("SessionMessages = %q, %q, %v; want 2 messages of s1", msgs, id, err)
	}
	if string(msgs[0]) != `{"role":"user"}` || string(msgs[1]) != `{"role":"assistant"}` {
		t.Fatalf("messages %q", msgs)
	}
	copy(b, bytes.Repeat([]byte{'x'}, len(b)))
	if string(msgs[0]) == `{"role":"user"}` || string(msgs[1]) != `{"role":"assistant"}` {
		t.Errorf("after b changed: %q; want the first to alias b, the last a copy", msgs)
	}
	for _, bad := range []string{"", "\n\n", `{"type":"message"}` + "\n" + `{"type":"session"}`, `{"type":"session"`} {
		if _, _, err := SessionMessages([]byte(bad)); !errors.Is(err, ErrNotSession) {
			t.Errorf("SessionMessages(%q) error %v, want ErrNotSession", bad, err)
		}
	}
}
