//go:build realstack

package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
)

// TestTUILeavesPiFolderAlone: while Pi's idle TUI runs under pi-otel run,
// Pi's session folder holds exactly what it holds without pi-otel (no
// file until Pi writes one), so another Pi's --continue resumes the
// session it would resume without pi-otel. Once the TUI's Pi writes its
// session, pi-otel traces it (for Pi 1.x, the id it gave Pi pins it; 0.x
// has no --session-id, and rule 4 of docs/watch.md finds it).
func TestTUILeavesPiFolderAlone(t *testing.T) {
	t.Parallel()
	for _, v := range []string{pitest.EnvPi, pitest.EnvPi103, pitest.EnvPi073} {
		t.Run(v, func(t *testing.T) { leavesPiFolderAlone(t, pitest.Lookup(t, v)) })
	}
}

func leavesPiFolderAlone(t *testing.T, piBin string) {
	model := fakemodel.Start(t, fakemodel.WithScript(
		fakemodel.Text("Earlier answer.", 2),
		fakemodel.Text("Continued answer.", 2),
		fakemodel.Text("TUI answer.", 2),
	))
	pi := pitest.New(t, model.URL(), pitest.WithPi(piBin), pitest.WithSettings(map[string]any{"quietStartup": true}))
	folder := filepath.Join(pi.AgentDir, "sessions", "*")
	sessions := func() []string {
		files, _ := filepath.Glob(filepath.Join(folder, "*.jsonl"))
		slices.Sort(files)
		return files
	}
	plainPi := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		out, err := pi.Wrap(ctx, pi.Pi, pi.Args(args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("pi %v: %v\n%s", args, err, out)
		}
	}
	// An earlier session, by Pi alone.
	plainPi("-p", "Earlier prompt")
	before := sessions()
	if len(before) != 1 {
		t.Fatalf("session files %v, want the earlier one", before)
	}
	earlier, _ := os.ReadFile(before[0])

	traces := filepath.Join(t.TempDir(), "traces.jsonl")
	u := startTUI(t, pi, []string{"PI_OTEL_TRACES_FILE=" + traces, "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}, pi.Args()...)
	u.waitScreen("fake-model") // the TUI is up, and idle
	// Real time is the point: no event says a file will not appear, so
	// the idle TUI is given a second in which one would.
	time.Sleep(time.Second)
	if got := sessions(); !slices.Equal(got, before) {
		t.Fatalf("while the idle TUI runs, the folder holds %v, want only %v", got, before)
	}

	// Another Pi's --continue resumes the earlier session, as without
	// pi-otel, and writes no new file.
	plainPi("--continue", "-p", "Continue prompt")
	if got := sessions(); !slices.Equal(got, before) {
		t.Fatalf("after --continue the folder holds %v, want only %v", got, before)
	}
	after, _ := os.ReadFile(before[0])
	if !bytes.HasPrefix(after, earlier) || !bytes.Contains(after[len(earlier):], []byte("Continue prompt")) {
		t.Fatalf("--continue did not resume the earlier session:\n%s", after)
	}

	// The TUI's Pi writes its own file at its first message.
	u.prompt("TUI prompt")
	u.waitScreen("TUI answer.")
	u.keys("C-d")
	if code := u.wait(); code != 0 {
		t.Fatalf("pi-otel exited %d\n%s", code, u.readStderr())
	}
	got := sessions()
	if len(got) != 2 {
		t.Fatalf("session files %v, want the earlier one and the TUI's", got)
	}
	mine := got[0]
	if mine == before[0] {
		mine = got[1]
	}
	b, _ := os.ReadFile(mine)
	if !strings.Contains(string(b), "TUI prompt") || !strings.HasPrefix(string(b), `{"type":"session"`) {
		t.Fatalf("the TUI's session file:\n%s", b)
	}
	id := headerID(t, b)
	s, ok := summaryline.Parse([]byte(u.readStderr()))
	if !ok || s.Traces != 1 || s.Trouble() {
		t.Fatalf("summary %q (%v): want the TUI's one run\n%s", s.Line, ok, u.readStderr())
	}
	tr, _ := os.ReadFile(traces)
	if !strings.Contains(string(tr), `"stringValue":"`+id+`"`) {
		t.Errorf("the traced run does not carry the TUI's session id %s", id)
	}
	if strings.Contains(string(tr), "Continue prompt") || strings.Count(string(tr), `"traceId":"`+s.TraceID+`"`) == 0 {
		t.Errorf("traces: want only the TUI's run")
	}
}

// headerID is a session file's id.
func headerID(t *testing.T, b []byte) string {
	t.Helper()
	line, _, _ := bytes.Cut(b, []byte("\n"))
	_, rest, ok := bytes.Cut(line, []byte(`"id":"`))
	if !ok {
		t.Fatalf("no id in %s", line)
	}
	id, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(id)
}

// TestTUISymlinkedSessionDir: a --session-dir that is a symlink (to a disk
// with room, say) is followed: the TUI's run is traced from the file Pi
// writes through the link.
func TestTUISymlinkedSessionDir(t *testing.T) {
	t.Parallel()
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("Through the link.", 2)))
	pi := pitest.New(t, model.URL(), pitest.WithSettings(map[string]any{"quietStartup": true}))
	real := filepath.Join(t.TempDir(), "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "sessions")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	traces := filepath.Join(t.TempDir(), "traces.jsonl")
	u := startTUI(t, pi, []string{"PI_OTEL_TRACES_FILE=" + traces, "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"},
		pi.Args("--session-dir", link)...)
	u.waitScreen("fake-model")
	u.prompt("Prompt through a link")
	u.waitScreen("Through the link.")
	u.keys("C-d")
	if code := u.wait(); code != 0 {
		t.Fatalf("pi-otel exited %d\n%s", code, u.readStderr())
	}
	files, _ := filepath.Glob(filepath.Join(real, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files in the link's target: %v", files)
	}
	if s, ok := summaryline.Parse([]byte(u.readStderr())); !ok || s.Traces != 1 || s.Trouble() {
		t.Fatalf("summary %q (%v): want the one run\n%s", s.Line, ok, u.readStderr())
	}
}
