//go:build realstack

package capture

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// tmux drives one Pi TUI on a private tmux server.
type tmux struct {
	t      *testing.T
	socket string
	env    []string
}

func (x *tmux) cmd(args ...string) *exec.Cmd {
	c := exec.Command("tmux", append([]string{"-L", x.socket}, args...)...)
	c.Env = x.env
	return c
}

func (x *tmux) run(args ...string) string {
	x.t.Helper()
	out, err := x.cmd(args...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

func (x *tmux) pane() string {
	out, _ := x.cmd("capture-pane", "-p", "-t", "pi").CombinedOutput()
	return string(out)
}

// waitFor polls the pane until cond holds.
func (x *tmux) waitFor(what string, cond func(pane string) bool) {
	x.t.Helper()
	wait.For(x.t, 60*time.Second, func() bool { return cond(x.pane()) },
		func() string { return fmt.Sprintf("waiting for %s; the pane shows:\n%s", what, x.pane()) })
}

func (x *tmux) alive() bool { return x.cmd("has-session", "-t", "pi").Run() == nil }

// tuiScript is what the fake model answers, in order, to the TUI scenario.
func tuiScript() []fakemodel.Response {
	return []fakemodel.Response{
		fakemodel.Overloaded(),
		fakemodel.Text("Hello from the TUI.", 3),
		fakemodel.Tools(
			fakemodel.Bash("call_tui_ok", "echo tool-ran"),
			fakemodel.Call("call_tui_missing", "read", map[string]any{"path": "no-such-file.txt"}),
		),
		fakemodel.Text("One tool worked, one failed.", 2),
	}
}

// TestSessionCaptureTUI records (with -update) the session file the real Pi
// 1.6.0 TUI writes in tmux: a prompt answered after a 529 retry, a ! command,
// a prompt with a working and a failing tool, a manual /compact, then exit by
// Ctrl-D. Without -update it checks the committed file.
func TestSessionCaptureTUI(t *testing.T) {
	dir := filepath.Join(*sessionsDir, "pi-1.6.0")
	if !*update {
		b, err := os.ReadFile(filepath.Join(dir, "tui.jsonl"))
		if err != nil {
			t.Fatalf("tui capture missing (re-record with -run TestSessionCaptureTUI -args -update): %v", err)
		}
		checkTUI(t, b)
		return
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed: %v", err)
	}
	model, err := fakemodel.New(fakemodel.WithScript(tuiScript()...), fakemodel.WithSummaries("Summary: a greeting and two tools.", 3))
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	env := pitest.New(t, model.URL(), pitest.WithSettings(map[string]any{
		"quietStartup": true,
		"compaction":   map[string]any{"keepRecentTokens": 50},
	}))
	x := &tmux{t: t, socket: fmt.Sprintf("pi-otel-capture-%d", os.Getpid()), env: append(env.Environ(), "TERM=xterm-256color")}
	t.Cleanup(func() { _ = x.cmd("kill-server").Run() })
	args := env.Args("--session-dir", env.SessionDir)
	line := env.Pi + " " + strings.Join(args, " ")
	x.run("new-session", "-d", "-s", "pi", "-x", "160", "-y", "48", "-c", env.WorkDir, line)
	// The footer, which names the model, comes with the editor, ready
	// for keys: the whole UI has drawn.
	x.waitFor("the footer", func(p string) bool { return strings.Contains(p, "fake-model") })

	send := func(text string) {
		x.run("send-keys", "-t", "pi", "-l", text)
		x.run("send-keys", "-t", "pi", "Enter")
	}
	send("Say hello")
	x.waitFor("the first answer", func(p string) bool { return strings.Contains(p, "Hello from the TUI.") })
	send("!echo from-bang")
	x.waitFor("the ! command's output", func(p string) bool { return strings.Count(p, "from-bang") >= 2 })
	send("Run two tools")
	x.waitFor("the second answer", func(p string) bool { return strings.Contains(p, "One tool worked, one failed.") })
	send("/compact")
	wait.For(t, 60*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(env.SessionDir, "*.jsonl"))
		b, _ := os.ReadFile(firstOr(files))
		return bytes.Contains(b, []byte(`"type":"compaction"`))
	}, func() string { return "no compaction entry; the pane shows:\n" + x.pane() })
	// Ctrl-D on the empty editor quits.
	x.run("send-keys", "-t", "pi", "C-d")
	if !wait.Until(20*time.Second, func() bool { return !x.alive() }) {
		t.Fatalf("pi did not exit on Ctrl-D; the pane shows:\n%s", x.pane())
	}
	sess, err := sessionFile(env.SessionDir)
	if err != nil {
		t.Fatal(err)
	}
	ver, err := piVersion(env)
	if err != nil {
		t.Fatal(err)
	}
	checkTUI(t, sess)
	c := &SessionCapture{Capture: Capture{Meta: Meta{
		Scenario: "tui", Description: "the TUI in tmux: a prompt answered after a 529 retry, a ! command, a prompt with a working and a failing tool, /compact, exit by Ctrl-D (no stream: the TUI has none)",
		PiVersion: ver, Mode: "tui", Args: append([]string{"pi"}, args...),
		ModelRequests: len(model.ChatRequests()), Requests: describe(model.ChatRequests()), ScriptErrors: model.ScriptErrors(),
	}}, Session: sess}
	if err := os.WriteFile(filepath.Join(dir, "tui.jsonl"), sess, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeMetaOnly(dir, &c.Capture); err != nil {
		t.Fatal(err)
	}
}

func firstOr(files []string) string {
	if len(files) == 0 {
		return ""
	}
	return files[0]
}

// checkTUI checks that the TUI's session file shows what the scenario did.
func checkTUI(t *testing.T, b []byte) {
	t.Helper()
	recs, err := decodeLines(b)
	if err != nil {
		t.Fatal(err)
	}
	var bash, errored, compactions, toolErrors int
	for _, r := range recs {
		if r["type"] == "compaction" {
			compactions++
		}
		m, _ := r["message"].(map[string]any)
		switch {
		case m == nil:
		case m["role"] == "bashExecution":
			bash++
		case m["role"] == "assistant" && m["stopReason"] == "error":
			errored++
		case m["role"] == "toolResult" && m["isError"] == true:
			toolErrors++
		}
	}
	if bash != 1 || errored != 1 || compactions != 1 || toolErrors != 1 {
		t.Errorf("tui session: %d bash, %d errored attempts, %d compactions, %d tool errors; want 1 each", bash, errored, compactions, toolErrors)
	}
}
