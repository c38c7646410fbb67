//go:build realstack

package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// watcher is one pi-otel watch process.
type watcher struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
}

func startWatch(t *testing.T, pi *pitest.Env, env []string, args ...string) *watcher {
	t.Helper()
	cmd := pi.Wrap(context.Background(), piOtelBin, append([]string{"watch"}, args...)...)
	cmd.Env = append(scrubbed(cmd.Env), env...)
	w := &watcher{t: t, cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = w.stderr // read only after the exit
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pi.Track(cmd)
	go func() { _ = cmd.Wait(); close(w.done) }()
	return w
}

// stop sends sig and waits for the exit; it returns the summary.
func (w *watcher) stop(sig syscall.Signal) summaryline.Summary {
	w.t.Helper()
	_ = w.cmd.Process.Signal(sig)
	select {
	case <-w.done:
	case <-time.After(hangGuard):
		w.t.Fatalf("pi-otel watch did not exit on %v\n%s", sig, w.stderr)
	}
	if sig == syscall.SIGKILL {
		return summaryline.Summary{}
	}
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		w.t.Fatalf("pi-otel watch exited %d on %v\n%s", code, sig, w.stderr)
	}
	s, ok := summaryline.Parse(w.stderr.Bytes())
	if !ok {
		w.t.Fatalf("no summary line:\n%s", w.stderr)
	}
	return s
}

// piPrompt runs Pi once in json mode, writing its session file in dir;
// extra flags pick an existing session.
func piPrompt(t *testing.T, pi *pitest.Env, dir, prompt string, extra ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	args := append(append([]string{"--mode", "json", "--session-dir", dir}, extra...), prompt)
	res, err := pi.Run(pi.Command(ctx, pi.Args(args...)...))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("pi: %v, exit %d\n%s", err, res.ExitCode, res.Stderr)
	}
}

// waitCommitted waits until the state file has moved past every byte of
// every session file in dir: the runs there were exported.
func waitCommitted(t *testing.T, w *watcher, state, dir string) {
	t.Helper()
	var files []string
	var b []byte
	if wait.Until(hangGuard, func() bool {
		files, _ = filepath.Glob(filepath.Join(dir, "*.jsonl"))
		b, _ = os.ReadFile(state)
		st, _, _ := sessionwatch.LoadState(state)
		done := len(files) > 0
		for _, f := range files {
			fi, err := os.Stat(f)
			if fs, _ := st.File(f); err != nil || fs.Committed != fi.Size() {
				done = false
			}
		}
		return done
	}) {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.done
	t.Fatalf("the state never covered %v:\n%s\nwatch's stderr:\n%s", files, b, w.stderr)
}

// TestWatchRestarts: runs written while pi-otel watch is stopped by
// SIGTERM, or killed by SIGKILL, are traced after it starts again, each
// exactly once.
func TestWatchRestarts(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	var script []fakemodel.Response
	for range 5 {
		script = append(script, fakemodel.Text("An answer.", 2))
	}
	model := fakemodel.Start(t, fakemodel.WithScript(script...))
	pi := pitest.New(t, model.URL())
	dir := pi.SessionDir
	state := filepath.Join(t.TempDir(), "state", "watch.json")
	service := "e2e-watch"
	env := otlpGRPC(j, service)
	args := []string{"--state", state, "--settle", "500ms", dir}
	since := time.Now().Add(-time.Second)

	// 1. A run while watch runs.
	w := startWatch(t, pi, env, args...)
	waitFile(t, state) // the first scan is done
	piPrompt(t, pi, dir, "first")
	waitCommitted(t, w, state, dir)
	s1 := w.stop(syscall.SIGTERM)

	// 2. While it is down: a new session, and a second run in the first.
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files %v", files)
	}
	piPrompt(t, pi, dir, "second")
	piPrompt(t, pi, dir, "third", "--session", files[0])
	w = startWatch(t, pi, env, args...)
	waitCommitted(t, w, state, dir)
	// 3. SIGKILL, then another run while it is dead.
	w.stop(syscall.SIGKILL)
	piPrompt(t, pi, dir, "fourth")
	w = startWatch(t, pi, env, args...)
	waitCommitted(t, w, state, dir)
	s3 := w.stop(syscall.SIGTERM)
	if lines := strings.Count(strings.TrimSpace(w.stderr.String()), "\n") + 1; lines != 2 {
		t.Errorf("pi-otel watch wrote %d lines; want the start line and the summary:\n%s", lines, w.stderr)
	}

	// The killed watch exported the two runs of step 2; the last, only the
	// run written while the second was dead.
	if s1.Traces != 1 || s3.Traces != 1 {
		t.Errorf("traces per watch: %d, (killed), %d; want 1, 1", s1.Traces, s3.Traces)
	}
	runs := 4
	traces := j.WaitService(t, context.Background(), service, since, runs*4)
	if len(traces) != runs {
		t.Fatalf("Jaeger holds %d traces, want %d (one per run)\n%s", len(traces), runs, treeOf(traces))
	}
	for _, tr := range traces {
		// A run traced twice would show its spans twice under one id.
		wantShape(t, tr, oneCall)
		seen := map[string]bool{}
		for _, sp := range tr.Spans {
			if seen[sp.SpanID] {
				t.Errorf("span %s %s stored twice", sp.Name, sp.SpanID)
			}
			seen[sp.SpanID] = true
		}
	}
	convs := map[string]int{}
	for _, tr := range traces {
		convs[root(t, tr).Str("gen_ai.conversation.id")]++
	}
	if len(convs) != 3 {
		t.Errorf("conversations %v: want 3 sessions, one with two runs", convs)
	}
}

func waitFile(t *testing.T, p string) {
	t.Helper()
	wait.For(t, hangGuard, func() bool { _, err := os.Stat(p); return err == nil },
		func() string { return p + " never appeared" })
}

// TestWatchCollectorOutage: runs complete while the collector is down.
// Nothing is committed until the collector, started later at the same
// address, has taken them; then each run is there exactly once.
func TestWatchCollectorOutage(t *testing.T) {
	t.Parallel()
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("An answer.", 2), fakemodel.Text("Another answer.", 2)))
	pi := pitest.New(t, model.URL())
	dir := pi.SessionDir
	state := filepath.Join(t.TempDir(), "watch.json")
	addr := freeport.Addr(t)
	service := "e2e-watch-outage"
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr, "OTEL_SERVICE_NAME=" + service, "OTEL_METRICS_EXPORTER=none"}
	since := time.Now().Add(-time.Second)

	w := startWatch(t, pi, env, "--state", state, "--settle", "500ms", dir)
	waitFile(t, state)
	piPrompt(t, pi, dir, "first")
	piPrompt(t, pi, dir, "second")
	// Both runs are traced and waiting for the exporter; the state must
	// not move while no collector has them. Real time is the point: that
	// it does not move can only be seen over a while.
	time.Sleep(2 * time.Second)
	b, _ := os.ReadFile(state)
	if !strings.Contains(string(b), `"files":[]`) {
		t.Fatalf("the state moved while the collector was down:\n%s", b)
	}
	j := jaegertest.Start(t, jaegertest.WithOTLPGRPC(addr))
	waitCommitted(t, w, state, dir)
	s := w.stop(syscall.SIGTERM)
	if !strings.Contains(w.stderr.String(), "no collector at "+addr) {
		t.Errorf("the outage was not reported:\n%s", w.stderr.String())
	}
	if s.Traces != 2 || strings.Contains(s.Line, "dropped") || strings.Contains(s.Line, "failed") {
		t.Errorf("summary %q: want 2 traces, nothing lost", s.Line)
	}
	traces := j.WaitService(t, context.Background(), service, since, 2*4)
	if len(traces) != 2 {
		t.Fatalf("Jaeger holds %d traces, want 2", len(traces))
	}
	for _, tr := range traces {
		wantShape(t, tr, oneCall)
	}
}

// TestWatchDefaultDir: without DIR, pi-otel watch follows Pi's own session
// root (here under PI_CODING_AGENT_DIR), project folders that appear after
// its start included.
func TestWatchDefaultDir(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("An answer.", 2)))
	pi := pitest.New(t, model.URL())
	state := filepath.Join(t.TempDir(), "watch.json")
	service := "e2e-watch-default"
	since := time.Now().Add(-time.Second)
	w := startWatch(t, pi, otlpGRPC(j, service), "--state", state, "--settle", "500ms")
	waitFile(t, state)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := pi.Run(pi.Command(ctx, pi.Args("--mode", "json", "hello")...))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("pi: %v %d\n%s", err, res.ExitCode, res.Stderr)
	}
	root := filepath.Join(pi.AgentDir, "sessions")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("Pi's session files: %v", files)
	}
	waitCommitted(t, w, state, filepath.Dir(files[0]))
	s := w.stop(syscall.SIGTERM)
	if !strings.Contains(w.stderr.String(), "watching "+root+" ") || s.Traces != 1 {
		t.Errorf("want the run traced from %s:\n%s", root, w.stderr.String())
	}
	wantShape(t, one(t, j.WaitService(t, context.Background(), service, since, 4)), oneCall)
}
