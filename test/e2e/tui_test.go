//go:build realstack

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// tui is one real Pi terminal UI under pi-otel run, in a detached tmux
// session of its own (its own tmux server too, so tests never share one).
type tui struct {
	t        *testing.T
	socket   string
	name     string
	dir      string
	pi       *pitest.Env
	stderr   string // pi-otel's stderr (Pi's too): the TUI draws on stdout
	exitFile string
}

// startTUI runs `pi-otel run -- pi ARGS` on a 160x48 terminal. env is added
// to Pi's hermetic environment.
func startTUI(t *testing.T, pi *pitest.Env, env []string, args ...string) *tui {
	t.Helper()
	return startTerminal(t, pi, env, append([]string{piOtelBin, "run", "--", pi.Pi}, args...))
}

// startTerminal runs argv on a terminal of its own.
func startTerminal(t *testing.T, pi *pitest.Env, env []string, argv []string) *tui {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is needed for the TUI tests (apt-get install tmux)")
	}
	dir := t.TempDir()
	u := &tui{t: t, socket: filepath.Join(dir, "tmux.sock"), name: "pi", dir: dir, pi: pi,
		stderr: filepath.Join(dir, "stderr"), exitFile: filepath.Join(dir, "exit")}
	// The command runs through a script so that the environment is exactly
	// Pi's hermetic one plus env, whatever tmux's server has.
	var b strings.Builder
	b.WriteString("#!/bin/sh\ncd " + shellQuote(pi.WorkDir) + "\n")
	b.WriteString("exec env -i")
	for _, kv := range append(append(scrubbed(pi.Environ()), "TERM=xterm-256color"), env...) {
		b.WriteString(" " + shellQuote(kv))
	}
	b.WriteString(" sh -c " + shellQuote(`"$0" "$@" 2>`+shellQuote(u.stderr)+`; echo $? >`+shellQuote(u.exitFile)))
	for _, a := range argv {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	script := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(script, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	u.tmux("new-session", "-d", "-x", "160", "-y", "48", "-s", u.name, script)
	t.Cleanup(func() {
		_ = exec.Command("tmux", "-S", u.socket, "kill-server").Run()
	})
	return u
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (u *tui) tmux(args ...string) string {
	u.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", u.socket}, args...)...).CombinedOutput()
	if err != nil {
		u.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is what the terminal shows now.
func (u *tui) screen() string {
	out, _ := exec.Command("tmux", "-S", u.socket, "capture-pane", "-p", "-t", u.name).CombinedOutput()
	return string(out)
}

// waitScreen waits until the terminal shows text; the guard only keeps a
// hung Pi from hanging the suite.
func (u *tui) waitScreen(text string) {
	u.t.Helper()
	wait.For(u.t, hangGuard, func() bool { return strings.Contains(u.screen(), text) }, func() string {
		return fmt.Sprintf("the TUI never showed %q; screen:\n%s\nstderr:\n%s", text, u.screen(), u.readStderr())
	})
}

// waitLine waits until a whole line of the terminal reads line.
func (u *tui) waitLine(line string) {
	u.t.Helper()
	wait.For(u.t, hangGuard, func() bool {
		for _, l := range strings.Split(u.screen(), "\n") {
			if strings.TrimSpace(l) == line {
				return true
			}
		}
		return false
	}, func() string { return fmt.Sprintf("no line %q; screen:\n%s", line, u.screen()) })
}

// prompt types a prompt and submits it.
func (u *tui) prompt(text string) {
	u.t.Helper()
	u.tmux("send-keys", "-t", u.name, "-l", text)
	// Input that arrives at once reads as a paste, whose Enter is a new
	// line: pace the Enter as a person would. Real time is the point: the
	// TUI tells a paste from typing by it.
	time.Sleep(300 * time.Millisecond)
	u.tmux("send-keys", "-t", u.name, "Enter")
}

func (u *tui) keys(keys ...string) {
	u.t.Helper()
	u.tmux(append([]string{"send-keys", "-t", u.name}, keys...)...)
}

// wait waits for pi-otel to exit and returns its exit code.
func (u *tui) wait() int {
	u.t.Helper()
	var b []byte
	wait.For(u.t, hangGuard, func() bool {
		var err error
		b, err = os.ReadFile(u.exitFile)
		return err == nil && strings.HasSuffix(string(b), "\n")
	}, func() string {
		return fmt.Sprintf("pi-otel did not exit; screen:\n%s\nstderr:\n%s", u.screen(), u.readStderr())
	})
	code, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		u.t.Fatalf("exit file %q", b)
	}
	return code
}

// quit quits Pi with Ctrl-D on an empty editor, and returns pi-otel's
// result once it exited 0 with a summary line.
func (u *tui) quit() *result {
	u.t.Helper()
	u.keys("C-d")
	code := u.wait()
	stderr := u.readStderr()
	if code != 0 {
		u.t.Fatalf("pi-otel exited %d\nstderr:\n%s\nscreen:\n%s", code, stderr, u.screen())
	}
	r := &result{stderr: []byte(stderr)}
	var ok bool
	if r.summary, ok = summaryline.Parse(r.stderr); !ok {
		u.t.Fatalf("no summary line:\n%s", stderr)
	}
	return r
}

func (u *tui) readStderr() string {
	b, _ := os.ReadFile(u.stderr)
	return string(b)
}

// TestTUI drives the real Pi 1.6.0 terminal UI under `pi-otel run -- pi`:
// three prompts (a compaction after the first, a tool that works and one
// that fails, a 529 retry), then Ctrl-D. Each run is one trace in Jaeger,
// all with the session's conversation id.
func TestTUI(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	model := fakemodel.Start(t,
		fakemodel.WithSummaries("Summary: earlier work, compacted.", 3),
		fakemodel.WithScript(
			// 7000 prompt tokens in an 8000 window: compaction after the run.
			fakemodel.Text(strings.Repeat("First answer, filling context. ", 30), 3).
				WithUsage(fakemodel.Usage{PromptTokens: 7000, CompletionTokens: 200}),
			fakemodel.Tools(
				fakemodel.Bash("call_ok", "echo hello from bash"),
				fakemodel.Call("call_missing", "read", map[string]any{"path": "does-not-exist.txt"}),
			),
			fakemodel.Text("One tool worked, one failed.", 2),
			fakemodel.Overloaded(),
			fakemodel.Text("Recovered after overload.", 2),
			fakemodel.Text("A new session answers.", 2),
		))
	m := pitest.DefaultModel()
	m.ContextWindow, m.MaxTokens = 8000, 1024
	pi := pitest.New(t, model.URL(), pitest.WithModel(m), pitest.WithSettings(map[string]any{
		"quietStartup": true,
		"compaction":   map[string]any{"reserveTokens": 2000, "keepRecentTokens": 200},
	}))
	service := "e2e-tui"
	since := time.Now().Add(-time.Second)
	u := startTUI(t, pi, otlpGRPC(j, service), pi.Args()...)
	u.waitScreen("fake-model") // the footer: the TUI is up

	u.prompt("First prompt")
	u.waitScreen("First answer, filling context.")
	u.waitScreen("Compacted from") // the compaction after the first run
	// A resized terminal reaches Pi: its rules are redrawn to the new width.
	u.tmux("resize-window", "-t", u.name, "-x", "120", "-y", "40")
	u.waitLine(strings.Repeat("─", 120))
	u.prompt("Run two tools")
	u.waitScreen("One tool worked, one failed.")
	u.prompt("Try again")
	u.waitScreen("Recovered after overload.")
	// /new: a session file pi-otel did not pin, traced since no other Pi
	// runs in this folder.
	u.prompt("/new")
	// Keys typed while /new resets the editor are lost: wait for it.
	u.waitScreen("New session started")
	u.prompt("In a new session")
	u.waitScreen("A new session answers.")
	r := u.quit()
	if r.summary.Traces != 4 {
		t.Fatalf("%d traces, want one per prompt: %s", r.summary.Traces, r.summary.Line)
	}
	traces := stored(t, j, service, since, r)
	if len(traces) != 4 {
		t.Fatalf("Jaeger holds %d traces, want 4", len(traces))
	}
	newSession := traces[3]
	traces = traces[:3]
	conv := ""
	var compactions, tools, failedTools, retries int
	for _, tr := range traces {
		rt := root(t, tr)
		if rt.Name != "invoke_agent pi" {
			t.Errorf("root %q", rt.Name)
		}
		id := rt.Str("gen_ai.conversation.id")
		if id == "" || (conv != "" && id != conv) {
			t.Errorf("conversation ids %q and %q: want one session id", conv, id)
		}
		conv = id
		compactions += len(tr.Named("pi.compaction"))
		retries += len(tr.Named("pi.retry"))
		for _, s := range tr.Spans {
			if strings.HasPrefix(s.Name, "execute_tool") {
				tools++
				if s.Status.Code == "error" {
					failedTools++
				}
			}
		}
	}
	if compactions != 1 || tools != 2 || failedTools != 1 || retries != 1 {
		files, _ := filepath.Glob(filepath.Join(pi.AgentDir, "sessions", "*", "*.jsonl"))
		var types []string
		for _, f := range files {
			b, _ := os.ReadFile(f)
			for _, l := range strings.Split(string(b), "\n") {
				if len(l) > 120 {
					l = l[:120]
				}
				types = append(types, l)
			}
		}
		t.Errorf("compactions %d, tools %d (failed %d), retries %d: want 1, 2 (1), 1\n%s\nsession file:\n%s",
			compactions, tools, failedTools, retries, treeOf(traces), strings.Join(types, "\n"))
	}
	// The session files are there, named for their conversation ids.
	files, _ := filepath.Glob(filepath.Join(pi.AgentDir, "sessions", "*", "*.jsonl"))
	conv2 := root(t, newSession).Str("gen_ai.conversation.id")
	if len(files) != 2 || conv2 == conv || !strings.Contains(strings.Join(files, " "), conv) || !strings.Contains(strings.Join(files, " "), conv2) {
		t.Errorf("session files %v, want two, named for %s and %s", files, conv, conv2)
	}
	wantShape(t, newSession, oneCall)
}

// TestTUISigterm: SIGTERM to pi-otel mid-tool reaches Pi as today: pi-otel
// exits with the code Pi itself exits with when signalled directly (in the
// TUI, Pi handles SIGTERM itself and exits 0), and the run it stopped is
// traced as Pi recorded it.
func TestTUISigterm(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(
		fakemodel.Tools(fakemodel.Bash("call_sleep_1", "sleep 30")),
		fakemodel.Tools(fakemodel.Bash("call_sleep_2", "sleep 30")),
	))
	pi := pitest.New(t, model.URL(), pitest.WithSettings(map[string]any{"quietStartup": true}))
	service := "e2e-tui-sigterm"

	// sigterm signals the terminal's command (its command line holding
	// want) once the tool's sleep runs, and returns its exit code.
	sigterm := func(u *tui, want string) int {
		t.Helper()
		u.waitScreen("fake-model")
		u.prompt("Sleep a while")
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		pane, err := strconv.Atoi(strings.TrimSpace(u.tmux("display-message", "-p", "-t", u.name, "#{pane_pid}")))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := waitDescendant(ctx, pane, "sleep", "30"); err != nil {
			t.Fatal(err)
		}
		// The terminal runs sh, and sh the command: Pi, or pi-otel.
		target := 0
		for _, p := range descendants(pane) {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
			if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 1 && f[1] == strconv.Itoa(pane) {
				target = p
			}
		}
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", target)); target == 0 || !strings.Contains(string(b), want) {
			t.Fatalf("the terminal's command is %q, want %q", b, want)
		}
		if err := syscall.Kill(target, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		return u.wait()
	}
	direct := sigterm(startTerminal(t, pi, nil, append([]string{pi.Pi}, pi.Args()...)), "pi")
	since := time.Now().Add(-time.Second)
	u := startTUI(t, pi, otlpGRPC(j, service), pi.Args()...)
	if code := sigterm(u, piOtelBin+"\x00run\x00"); code != direct {
		t.Fatalf("pi-otel exited %d; Pi alone exits %d on SIGTERM\n%s", code, direct, u.readStderr())
	}
	r := &result{stderr: []byte(u.readStderr())}
	var ok bool
	if r.summary, ok = summaryline.Parse(r.stderr); !ok {
		t.Fatalf("no summary:\n%s", r.stderr)
	}
	// Pi records the stop itself: the tool's result in error, then an
	// aborted answer. The trace shows the run aborted there.
	tr := one(t, stored(t, j, service, since, r))
	wantAttrs(t, root(t, tr), map[string]any{"pi.aborted": true})
	tool := only(t, tr, "execute_tool bash")
	if tool.Status.Code != "error" {
		t.Errorf("the tool call Pi was stopped in: status %+v", tool.Status)
	}
}

// TestTUITwoPisInOneFolder: a second Pi, not under pi-otel, works in the
// same folder at the same time. pi-otel traces its own Pi's pinned
// session, never the other's; its own /new meanwhile is traced only if
// caught open by its Pi, else left alone, and one line says so.
func TestTUITwoPisInOneFolder(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(
		fakemodel.Text("Answer for A.", 2),
		fakemodel.Text("Answer for B.", 2),
		fakemodel.Text("Second answer for A.", 2),
	))
	pi := pitest.New(t, model.URL(), pitest.WithSettings(map[string]any{"quietStartup": true}))
	service := "e2e-two-pis"
	since := time.Now().Add(-time.Second)
	a := startTUI(t, pi, otlpGRPC(j, service), pi.Args()...)
	a.waitScreen("fake-model")
	b := startTerminal(t, pi, nil, append([]string{pi.Pi}, pi.Args()...))
	b.waitScreen("fake-model")

	a.prompt("Prompt A")
	a.waitScreen("Answer for A.")
	b.prompt("Prompt B")
	b.waitScreen("Answer for B.")
	a.prompt("/new")
	a.waitScreen("New session started")
	a.prompt("Prompt A2")
	a.waitScreen("Second answer for A.")
	a.keys("C-d")
	if code := a.wait(); code != 0 {
		t.Fatalf("pi-otel exited %d\n%s", code, a.readStderr())
	}
	b.keys("C-d")
	b.wait()

	stderr := a.readStderr()
	r := &result{stderr: []byte(stderr)}
	var ok bool
	if r.summary, ok = summaryline.Parse(r.stderr); !ok {
		t.Fatalf("no summary:\n%s", stderr)
	}
	traces := stored(t, j, service, since, r)
	files, _ := filepath.Glob(filepath.Join(pi.AgentDir, "sessions", "*", "*.jsonl"))
	if len(files) != 3 {
		t.Fatalf("session files %v, want 3 (A, B, A after /new)", files)
	}
	traced := map[string]bool{} // first prompt of each traced session
	for _, tr := range traces {
		conv := root(t, tr).Str("gen_ai.conversation.id")
		for _, f := range files {
			if strings.Contains(f, conv) {
				b, _ := os.ReadFile(f)
				traced[firstUserText(b)] = true
			}
		}
	}
	// Never the other Pi's session; always the pinned one. A's /new is
	// A's own: traced if pi-otel caught A holding it open (rule 3), else
	// left alone and counted.
	if traced["Prompt B"] || !traced["Prompt A"] || len(traced) != len(traces) {
		t.Fatalf("traced sessions %v (%d traces): want Prompt A, never Prompt B", traced, len(traces))
	}
	left := 2
	if traced["Prompt A2"] {
		left = 1
	}
	if !strings.Contains(stderr, fmt.Sprintf("%d session files written while another Pi ran", left)) {
		t.Errorf("want a line about the %d files left alone:\n%s", left, stderr)
	}
	t.Logf("traced: %v", traced)
}

// firstUserText finds the first prompt in a session file, for messages.
func firstUserText(b []byte) string {
	i := strings.Index(string(b), `"text":"Prompt`)
	if i < 0 {
		return ""
	}
	rest := string(b[i+8:])
	return rest[:strings.IndexByte(rest, '"')]
}

// TestTUIPrintModeIsTraced: -p text output (no --mode) goes to pi-otel's
// stdout untouched, and the run is traced from the session file.
func TestTUIPrintModeIsTraced(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("Printed answer.", 2)))
	pi := pitest.New(t, model.URL())
	service := "e2e-print"
	since := time.Now().Add(-time.Second)
	r := runPiOtel(t, pi, call{
		args: append([]string{"run", "--", pi.Pi}, pi.Args("-p", "Say something")...),
		env:  otlpGRPC(j, service),
	})
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(string(r.stdout), "Printed answer.") {
		t.Errorf("Pi's text output did not come through: %q", r.stdout)
	}
	traces := stored(t, j, service, since, r)
	tr := one(t, traces)
	wantShape(t, tr, oneCall)
}

// TestTUIPrintModeOlderPis: -p text output of Pi 1.0.3 and 0.73.1 (which
// has no --session-id, so its file is found by rule 4 of docs/watch.md).
func TestTUIPrintModeOlderPis(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	for _, v := range []string{pitest.EnvPi103, pitest.EnvPi073} {
		t.Run(v, func(t *testing.T) {
			model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("Printed answer.", 2)))
			pi := pitest.New(t, model.URL(), pitest.WithPi(pitest.Lookup(t, v)))
			service := "e2e-print-" + strings.ToLower(v)
			since := time.Now().Add(-time.Second)
			r := runPiOtel(t, pi, call{
				args: append([]string{"run", "--", pi.Pi}, pi.Args("-p", "Say something")...),
				env:  otlpGRPC(j, service),
			})
			if r.code != 0 || !strings.Contains(string(r.stdout), "Printed answer.") {
				t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
			}
			wantShape(t, one(t, stored(t, j, service, since, r)), oneCall)
		})
	}
}

// TestTUIContinue: --continue resumes the newest session; only the new
// run is traced, under the same conversation id.
func TestTUIContinue(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("First.", 2), fakemodel.Text("Second.", 2)))
	pi := pitest.New(t, model.URL())
	service := "e2e-continue"
	since := time.Now().Add(-time.Second)
	var convs []string
	for _, args := range [][]string{{"-p", "one"}, {"--continue", "-p", "two"}} {
		r := runPiOtel(t, pi, call{
			args: append([]string{"run", "--", pi.Pi}, pi.Args(args...)...),
			env:  otlpGRPC(j, service),
		})
		if r.code != 0 || r.summary.Traces != 1 {
			t.Fatalf("%v: exit %d, %s\n%s", args, r.code, r.summary.Line, r.stderr)
		}
		tr := j.WaitTrace(t, context.Background(), r.summary.TraceID, 4)
		convs = append(convs, root(t, tr).Str("gen_ai.conversation.id"))
	}
	if convs[0] == "" || convs[0] != convs[1] {
		t.Errorf("conversation ids %v: want the one resumed session", convs)
	}
	traces := j.WaitService(t, context.Background(), service, since, 8)
	if len(traces) != 2 {
		t.Errorf("%d traces, want 2: the resumed run was traced again?\n%s", len(traces), treeOf(traces))
	}
}

// TestTUINoSession: nothing to trace, one line says so, Pi runs as usual.
func TestTUINoSession(t *testing.T) {
	t.Parallel()
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("No session here.", 2)))
	pi := pitest.New(t, model.URL())
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := pi.Wrap(ctx, piOtelBin, append([]string{"run", "--", pi.Pi}, pi.Args("--no-session", "-p", "Hi")...)...)
	cmd.Env = scrubbed(cmd.Env)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "No session here.") {
		t.Errorf("stdout %q", stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "nothing to trace") {
		t.Errorf("stderr %q: want the one line saying there is nothing to trace", stderr.String())
	}
}

// TestTUIQuitWithoutPrompt: Pi leaves no session file when nothing was
// said, and neither does pi-otel.
func TestTUIQuitWithoutPrompt(t *testing.T) {
	t.Parallel()
	model := fakemodel.Start(t)
	pi := pitest.New(t, model.URL(), pitest.WithSettings(map[string]any{"quietStartup": true}))
	u := startTUI(t, pi, []string{"OTEL_TRACES_EXPORTER=none"}, pi.Args()...)
	u.waitScreen("fake-model")
	u.keys("C-d")
	if code := u.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, u.readStderr())
	}
	files, _ := filepath.Glob(filepath.Join(pi.AgentDir, "sessions", "*", "*.jsonl"))
	if len(files) != 0 {
		t.Errorf("session files left behind: %v", files)
	}
	if !strings.Contains(u.readStderr(), "pi-otel: 0 traces") {
		t.Errorf("stderr %q: want the summary", u.readStderr())
	}
}

// treeOf renders traces for a failure message.
func treeOf(ts []*jaegertest.Trace) string {
	var b strings.Builder
	for _, tr := range ts {
		fmt.Fprintln(&b, tr.Tree())
	}
	return b.String()
}

// oneCall is a run of one model call and no tool.
const oneCall = `
invoke_agent pi
  pi.agent_run
    pi.turn
      chat fake-model
`

// wantShape checks a trace's names and nesting.
func wantShape(t *testing.T, tr *jaegertest.Trace, want string) {
	t.Helper()
	got := strings.TrimSpace(spantree.Shape(jaegertest.Forest(t, tr)))
	if want = strings.TrimSpace(want); got != want {
		t.Fatalf("trace %s:\n%s\nwant:\n%s", tr.ID, got, want)
	}
}
