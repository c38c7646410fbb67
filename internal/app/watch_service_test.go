package app_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// piOtel is the pi-otel binary the tests run, built once.
func piOtel(t *testing.T) string {
	t.Helper()
	return proc.Shared(t, "./cmd/pi-otel")
}

func TestMain(m *testing.M) {
	code := m.Run()
	proc.RemoveShared()
	os.Exit(code)
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

func startWatch(t *testing.T, bin string, env []string, args ...string) *watcher {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"watch"}, args...)...)
	cmd.Env = env
	cmd.SysProcAttr = proc.Group()
	return startCmd(t, cmd)
}

// startCmd starts cmd and reads its stderr line by line.
func startCmd(t *testing.T, cmd *exec.Cmd) *watcher {
	t.Helper()
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
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(t.TempDir(), "watch.json")
	env := watchEnv(t, "OTEL_TRACES_EXPORTER=none")
	bin := piOtel(t)
	first := startWatch(t, bin, env, "--state", state, dir)
	first.waitLine("pi-otel: watching " + dir)

	second := startWatch(t, bin, env, "--state", state, dir)
	if code := second.exit(); code != 1 {
		t.Errorf("second watcher exited %d, want 1:\n%s", code, second.stderr())
	}
	want := "pi-otel: another watch is following state " + state + " (process " + itoa(first.cmd.Process.Pid) + " holds " + state + ".lock)"
	if !strings.HasPrefix(second.stderr(), want) || strings.Contains(second.stderr(), "watching") {
		t.Errorf("second watcher said:\n%s\nwant first:\n%s", second.stderr(), want)
	}

	waiter := startWatch(t, bin, env, "--state", state, "--wait-lock", dir)
	waiter.waitLine("is in use: process " + itoa(first.cmd.Process.Pid) + " holds")
	if strings.Contains(waiter.stderr(), "pi-otel: watching") {
		t.Fatalf("the waiter started while the first ran:\n%s", waiter.stderr())
	}
	first.signal(syscall.SIGTERM)
	if code := first.exit(); code != 0 {
		t.Errorf("first watcher exited %d:\n%s", code, first.stderr())
	}
	waiter.waitLine("pi-otel: watching " + dir)
	// A holder killed outright releases the lock too: the kernel's, not
	// the file's, so the pid left in the file does not block the next.
	waiter.signal(syscall.SIGKILL)
	waiter.exit()
	next := startWatch(t, bin, env, "--state", state, dir)
	next.waitLine("pi-otel: watching " + dir)
	next.signal(syscall.SIGTERM)
	if code := next.exit(); code != 0 {
		t.Errorf("the watcher after a kill -9 exited %d:\n%s", code, next.stderr())
	}
}

// TestWatchSIGHUP: SIGHUP ends watch as SIGTERM does, with the final
// flush (the metrics, whose interval is an hour, are written only by it)
// and the summary line, and exit code 0.
func TestWatchSIGHUP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := repo.Read(t, "testdata/sessions/pi-1.6.0/two-prompts.jsonl")
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	traces, metrics := filepath.Join(out, "traces.jsonl"), filepath.Join(out, "metrics.jsonl")
	state := filepath.Join(out, "watch.json")
	env := []string{"HOME=" + t.TempDir(), "PI_OTEL_SPOOL_DIR=none", "OTEL_LOGS_EXPORTER=none", "OTEL_METRIC_EXPORT_INTERVAL=3600000"}
	bin := piOtel(t)
	w := startWatch(t, bin, env, "--state", state, "--since", "all", "--settle", "1s", "--traces-file", traces, "--metrics-file", metrics, dir)
	w.waitLine("pi-otel: watching")
	// The history pass commits as it goes: wait for the state to move.
	readState := func() string { b, _ := os.ReadFile(state); return string(b) }
	wait.For(t, time.Minute, func() bool { return strings.Contains(readState(), `"committed":`+itoa(len(src))) },
		func() string { return "state never committed the file: " + readState() + "\n" + w.stderr() })
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

// TestDamagedSpoolFile: a damaged file in the spool is named once in one
// line, kept aside as NAME.corrupt, and counted in the summary and in
// pi_otel.spool.corrupt, while the replay itself goes on.
func TestDamagedSpoolFile(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close() // no collector: the spool is read, and nothing is sent
	spoolDir := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(spoolDir, 0o700); err != nil {
		t.Fatal(err)
	}
	damaged := []byte("\xff\xff\xff\xff not protobuf")
	name := "00000000000000000001-1-1.otlp"
	if err := os.WriteFile(filepath.Join(spoolDir, name), damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	metrics := filepath.Join(t.TempDir(), "metrics.jsonl")
	bin := piOtel(t)
	for run := range 2 {
		cmd := exec.Command(bin, "replay", "--spool-dir", spoolDir, "--traces-endpoint", "http://"+addr,
			"--metrics-file", metrics, "--flush-timeout", "2s", repo.Path("testdata/sessions/pi-1.6.0/two-prompts.jsonl"))
		cmd.Env = []string{"HOME=" + t.TempDir(), "OTEL_LOGS_EXPORTER=none"}
		out, _ := cmd.CombinedOutput()
		aside := filepath.Join(spoolDir, name+".corrupt")
		line := "pi-otel: spool file " + aside + " is damaged ("
		if n := strings.Count(string(out), line); n != 1-run {
			t.Errorf("run %d: %d lines %q, want %d:\n%s", run, n, line, 1-run, out)
		}
		if has := strings.Contains(string(out), "1 damaged spool file set aside"); has != (run == 0) {
			t.Errorf("run %d: summary:\n%s", run, out)
		}
		if b, err := os.ReadFile(aside); err != nil || string(b) != string(damaged) {
			t.Errorf("run %d: kept file %q, %v", run, b, err)
		}
		if run == 0 {
			m, _ := os.ReadFile(metrics)
			if !regexp.MustCompile(`"name":"pi_otel.spool.corrupt","sum":\{[^}]*"dataPoints":\[\{"asInt":"1"`).Match(m) {
				t.Errorf("pi_otel.spool.corrupt is not 1 in:\n%s", m)
			}
		}
	}
}

// replayCount is what replay makes of a session file: traces and spans.
func replayCount(t *testing.T, bin, file string) summaryline.Summary {
	t.Helper()
	out, err := exec.Command(bin, "replay", "--traces-exporter", "none", "--metrics-exporter", "none", file).CombinedOutput()
	s, ok := summaryline.Parse(out)
	if err != nil || !ok {
		t.Fatalf("replay %s: %v\n%s", file, err, out)
	}
	return s
}

// TestWatchFollowsSymlinks: a DIR that is a symlink is followed, as is a
// symlinked project folder inside it (its new files too, through an
// inotify watch on the real folder), and one linked in while watch runs;
// a link back to an ancestor and a second link to one folder are walked
// once. Watch exports what replay makes of each file, once.
func TestWatchFollowsSymlinks(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	base := t.TempDir()
	real, ext := filepath.Join(base, "real"), filepath.Join(base, "ext", "--p2--")
	for _, d := range []string{filepath.Join(real, "--p1--"), ext} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := func(name string) string { return repo.Path("testdata/sessions/pi-1.6.0/" + name + ".jsonl") }
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(src("two-prompts"), filepath.Join(real, "--p1--", "a.jsonl"))
	copyFile(src("bash-tool"), filepath.Join(ext, "b.jsonl"))
	for link, target := range map[string]string{
		filepath.Join(real, "--p2--"):         ext,                           // a symlinked project folder
		filepath.Join(real, "--p1--", "loop"): real,                          // a loop back to the root
		filepath.Join(real, "again"):          filepath.Join(real, "--p1--"), // a second way to one folder
		filepath.Join(base, "root"):           real,                          // the DIR given
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(base, "root")
	out := t.TempDir()
	traces, state := filepath.Join(out, "traces.jsonl"), filepath.Join(out, "watch.json")
	w := startWatch(t, bin, watchEnv(t), "--state", state, "--since", "all", "--settle", "1s", "--traces-file", traces, root)
	w.waitLine("pi-otel: watching " + root)
	committed := func(path string, size int) bool {
		b, _ := os.ReadFile(state)
		return regexp.MustCompile(`"path":` + regexp.QuoteMeta(strconv.Quote(path)) + `,"committed":` + strconv.Itoa(size) + `[,}]`).Match(b)
	}
	waitState := func(path, from string) {
		t.Helper()
		info, err := os.Stat(from)
		if err != nil {
			t.Fatal(err)
		}
		wait.For(t, time.Minute, func() bool { return committed(path, int(info.Size())) }, func() string {
			b, _ := os.ReadFile(state)
			return fmt.Sprintf("%s never committed: %s\n%s", path, b, w.stderr())
		})
	}
	// State keys are the real paths.
	waitState(filepath.Join(real, "--p1--", "a.jsonl"), src("two-prompts"))
	waitState(filepath.Join(ext, "b.jsonl"), src("bash-tool"))
	// A session that appears later in the symlinked project folder.
	copyFile(src("overflow"), filepath.Join(ext, "c.jsonl"))
	waitState(filepath.Join(ext, "c.jsonl"), src("overflow"))
	// A symlinked project folder made while watch runs, with a session.
	ext3 := filepath.Join(base, "ext3", "--p3--")
	if err := os.MkdirAll(ext3, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(src("text"), filepath.Join(ext3, "d.jsonl"))
	if err := os.Symlink(ext3, filepath.Join(real, "--p3--")); err != nil {
		t.Fatal(err)
	}
	waitState(filepath.Join(ext3, "d.jsonl"), src("text"))
	w.signal(syscall.SIGTERM)
	if code := w.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, w.stderr())
	}
	want := summaryline.Summary{}
	for _, n := range []string{"two-prompts", "bash-tool", "overflow", "text"} {
		s := replayCount(t, bin, src(n))
		want.Traces += s.Traces
		want.Spans += s.Spans
	}
	got, ok := summaryline.Parse([]byte(w.stderr()))
	if !ok || got.Traces != want.Traces || got.Spans != want.Spans || got.Trouble() {
		t.Errorf("summary %q, want %d traces and %d spans as replay gives", got.Line, want.Traces, want.Spans)
	}
	if !strings.Contains(got.Line, "(4 session files followed)") {
		t.Errorf("summary %q: want 4 files, each once", got.Line)
	}
	b, _ := os.ReadFile(traces)
	if n := strings.Count(string(b), `"spanId":`); n != want.Spans {
		t.Errorf("%d spans in the file, want %d", n, want.Spans)
	}
}

// TestWatchSaysWhyARootIsEmpty: a DIR that does not exist gets a line
// saying it is watched for, and is followed once it appears; an empty
// one says it holds no session file. Each line once.
func TestWatchSaysWhyARootIsEmpty(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	base := t.TempDir()
	missing, empty := filepath.Join(base, "later"), filepath.Join(base, "empty")
	dangling := filepath.Join(base, "dangling")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "watch.json")
	w := startWatch(t, bin, watchEnv(t, "OTEL_TRACES_EXPORTER=none"), "--state", state, "--settle", "1s", missing, empty, dangling)
	for _, line := range []string{
		"pi-otel: " + missing + " does not exist yet; watching for it to be created (checked every 2s)",
		"pi-otel: no session file in " + empty + " yet; new ones will be followed",
		"pi-otel: " + dangling + " is a symlink to a folder that does not exist; watching for it to be created (checked every 2s)",
	} {
		w.waitLine(line)
	}
	// It appears, with a session in it: followed from its start.
	if err := os.MkdirAll(filepath.Join(missing, "--p--"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := repo.Read(t, "testdata/sessions/pi-1.6.0/two-prompts.jsonl")
	if err := os.WriteFile(filepath.Join(missing, "--p--", "s.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	readState := func() string { st, _ := os.ReadFile(state); return string(st) }
	wait.For(t, time.Minute, func() bool { return strings.Contains(readState(), `"committed":`+strconv.Itoa(len(b))) },
		func() string {
			return "the new folder's session was never committed: " + readState() + "\n" + w.stderr()
		})
	w.signal(syscall.SIGTERM)
	if code := w.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, w.stderr())
	}
	for _, s := range []string{"does not exist yet", "no session file in", "is a symlink to"} {
		if n := strings.Count(w.stderr(), s); n != 1 {
			t.Errorf("%q said %d times:\n%s", s, n, w.stderr())
		}
	}
	if s, ok := summaryline.Parse([]byte(w.stderr())); !ok || s.Traces != 2 {
		t.Errorf("summary %q: want the 2 runs of the session that appeared", s.Line)
	}
}

// TestWatchNamesUnreadableFolders: a folder watch may not read is named
// with the system's reason, once, a root or a folder below one; it is not
// taken for one that does not exist. As root, the watch runs as nobody,
// since root reads every folder.
func TestWatchNamesUnreadableFolders(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	// Everything the process needs is open to another user.
	base, err := os.MkdirTemp("", "watch-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = os.Chmod(filepath.Join(base, "root", "sub"), 0o755)
		_ = os.Chmod(filepath.Join(base, "closed"), 0o755)
		os.RemoveAll(base)
	})
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(base, "pi-otel")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	closed, root, home := filepath.Join(base, "closed"), filepath.Join(base, "root"), filepath.Join(base, "home")
	sub := filepath.Join(root, "sub")
	for _, d := range []string{closed, sub, home} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{home, root} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{closed, sub} {
		if err := os.Chmod(d, 0o000); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "watch", "--state", filepath.Join(home, "watch.json"), closed, root)
	cmd.Env = []string{"HOME=" + home, "PI_OTEL_SPOOL_DIR=none", "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none"}
	cmd.SysProcAttr = proc.Group()
	if os.Getuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	w := startCmd(t, cmd)
	w.waitLine("pi-otel: cannot read session folder " + closed + ": permission denied")
	w.waitLine("pi-otel: cannot read session folder " + sub + ": permission denied")
	// A rescan (every 2s while a root is not watched) says nothing new. It
	// opens root before it tries sub, and ends before watch sees a signal.
	opens := dirOpens(t, root)
	wait.For(t, time.Minute, func() bool { return opens() > 0 }, func() string { return "no rescan of " + root })
	w.signal(syscall.SIGTERM)
	if code := w.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, w.stderr())
	}
	out := w.stderr()
	for _, s := range []string{closed + ": permission denied", sub + ": permission denied"} {
		if n := strings.Count(out, s); n != 1 {
			t.Errorf("%q said %d times:\n%s", s, n, out)
		}
	}
	if strings.Contains(out, "does not exist") || strings.Contains(out, "cannot watch") || strings.Contains(out, "no session file in "+closed) {
		t.Errorf("a misleading line:\n%s", out)
	}
}
