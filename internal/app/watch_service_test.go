package app_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// piOtel builds the binary once for the tests of this file.
func piOtel(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pi-otel-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath, binErr = proc.Build(dir, "./cmd/pi-otel")
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// watcher is one pi-otel watch process whose stderr is read line by line.
type watcher struct {
	t     *testing.T
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	more  chan struct{}
	done  chan struct{}
	err   error
}

func startWatch(t *testing.T, env []string, args ...string) *watcher {
	t.Helper()
	cmd := exec.Command(piOtel(t), append([]string{"watch"}, args...)...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := proc.StartPiped(t, cmd, proc.Stderr)
	w := &watcher{t: t, cmd: cmd, more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(p.Stderr)
		for sc.Scan() {
			w.mu.Lock()
			w.lines = append(w.lines, sc.Text())
			w.mu.Unlock()
			select {
			case w.more <- struct{}{}:
			default:
			}
		}
		w.err = cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-w.done
	})
	return w
}

func (w *watcher) stderr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n") + "\n"
}

// waitLine waits for a line containing s; the guard only keeps a hung
// process from hanging the suite.
func (w *watcher) waitLine(s string) {
	w.t.Helper()
	guard := time.After(time.Minute)
	for !strings.Contains(w.stderr(), s) {
		select {
		case <-w.more:
		case <-w.done:
			if !strings.Contains(w.stderr(), s) {
				w.t.Fatalf("exited (%v) without a line %q:\n%s", w.err, s, w.stderr())
			}
		case <-guard:
			w.t.Fatalf("no line %q:\n%s", s, w.stderr())
		}
	}
}

// exit waits for the process and returns its exit code.
func (w *watcher) exit() int {
	w.t.Helper()
	select {
	case <-w.done:
	case <-time.After(time.Minute):
		w.t.Fatalf("still running:\n%s", w.stderr())
	}
	var ee *exec.ExitError
	if errors.As(w.err, &ee) {
		return ee.ExitCode()
	}
	if w.err != nil {
		w.t.Fatal(w.err)
	}
	return 0
}

func (w *watcher) signal(sig syscall.Signal) {
	w.t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		w.t.Fatal(err)
	}
}

// watchEnv is a hermetic environment for watch: its own HOME, no
// telemetry leaving the machine, no spool.
func watchEnv(t *testing.T, extra ...string) []string {
	return append([]string{"HOME=" + t.TempDir(), "PI_OTEL_SPOOL_DIR=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}, extra...)
}

// TestWatchSecondWatcherOnOneState: a second watch on the same state exits
// at once with a clear message and code 1, and exports nothing; with
// --wait-lock it waits, and takes over when the first exits.
func TestWatchSecondWatcherOnOneState(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "watch.json")
	env := watchEnv(t, "OTEL_TRACES_EXPORTER=none")
	first := startWatch(t, env, "--state", state, dir)
	first.waitLine("pi-otel: watching " + dir)

	second := startWatch(t, env, "--state", state, dir)
	if code := second.exit(); code != 1 {
		t.Errorf("second watcher exited %d, want 1:\n%s", code, second.stderr())
	}
	want := "pi-otel: another watch is following state " + state + " (process " + itoa(first.cmd.Process.Pid) + " holds " + state + ".lock)"
	if !strings.HasPrefix(second.stderr(), want) || strings.Contains(second.stderr(), "watching") {
		t.Errorf("second watcher said:\n%s\nwant first:\n%s", second.stderr(), want)
	}

	waiter := startWatch(t, env, "--state", state, "--wait-lock", dir)
	waiter.waitLine("is in use: process " + itoa(first.cmd.Process.Pid) + " holds")
	if strings.Contains(waiter.stderr(), "pi-otel: watching") {
		t.Fatalf("the waiter started while the first ran:\n%s", waiter.stderr())
	}
	first.signal(syscall.SIGTERM)
	if code := first.exit(); code != 0 {
		t.Errorf("first watcher exited %d:\n%s", code, first.stderr())
	}
	waiter.waitLine("pi-otel: watching " + dir)
	waiter.signal(syscall.SIGTERM)
	if code := waiter.exit(); code != 0 {
		t.Errorf("waiter exited %d:\n%s", code, waiter.stderr())
	}
}

// TestWatchSIGHUP: SIGHUP ends watch as SIGTERM does, with the final
// flush (the metrics, whose interval is an hour, are written only by it)
// and the summary line, and exit code 0.
func TestWatchSIGHUP(t *testing.T) {
	dir := t.TempDir()
	src := repo.Read(t, "testdata/sessions/pi-1.6.0/two-prompts.jsonl")
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	traces, metrics := filepath.Join(out, "traces.jsonl"), filepath.Join(out, "metrics.jsonl")
	state := filepath.Join(out, "watch.json")
	env := []string{"HOME=" + t.TempDir(), "PI_OTEL_SPOOL_DIR=none", "OTEL_LOGS_EXPORTER=none", "OTEL_METRIC_EXPORT_INTERVAL=3600000"}
	w := startWatch(t, env, "--state", state, "--since", "all", "--settle", "1s", "--traces-file", traces, "--metrics-file", metrics, dir)
	w.waitLine("pi-otel: watching")
	// The history pass commits as it goes: wait for the state to move.
	guard := time.Now().Add(time.Minute)
	for {
		b, _ := os.ReadFile(state)
		if strings.Contains(string(b), `"committed":`+itoa(len(src))) {
			break
		}
		if time.Now().After(guard) {
			t.Fatalf("state never committed the file: %s\n%s", b, w.stderr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b, _ := os.ReadFile(metrics); len(b) != 0 {
		t.Fatalf("metrics written before the final flush: %q", b)
	}
	w.signal(syscall.SIGHUP)
	if code := w.exit(); code != 0 {
		t.Errorf("exit %d after SIGHUP, want 0 as after SIGTERM:\n%s", code, w.stderr())
	}
	s, ok := summaryline.Parse([]byte(w.stderr()))
	if !ok || s.Traces != 2 || s.Trouble() {
		t.Errorf("summary %+v (%v):\n%s", s, ok, w.stderr())
	}
	m, _ := os.ReadFile(metrics)
	if !strings.Contains(string(m), `"pi.runs"`) {
		t.Errorf("no final flush of the metrics: %q", m)
	}
	tr, _ := os.ReadFile(traces)
	if n := strings.Count(string(tr), `"traceId"`); n < s.Spans {
		t.Errorf("%d spans in the file, summary says %d", n, s.Spans)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
