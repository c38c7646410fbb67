//go:build realstack

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/otelcol"
	"github.com/pi-otel/pi-otel/internal/testutil/otlptest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// histWatch is a pi-otel watch process over a history (no Pi needed).
type histWatch struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
}

func startHistWatch(t *testing.T, env []string, args ...string) *histWatch {
	t.Helper()
	cmd := exec.Command(piOtelBin, append([]string{"watch"}, args...)...)
	cmd.Env = append(scrubbed(os.Environ()), env...)
	w := &histWatch{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(w.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-w.done
	})
	return w
}

func (w *histWatch) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// stop ends the watch with SIGTERM and wants exit 0.
func (w *histWatch) stop(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(hangGuard):
		t.Fatalf("pi-otel watch did not exit on SIGTERM\n%s", w.stderr)
	}
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("pi-otel watch exited %d\n%s", code, w.stderr)
	}
}

// waitState polls the state file, once written, until cond holds.
func waitState(t *testing.T, w *histWatch, state string, cond func(st sessionwatch.State) bool) sessionwatch.State {
	t.Helper()
	var st sessionwatch.State
	wait.For(t, hangGuard, func() bool {
		var err error
		st, _, err = sessionwatch.LoadState(state)
		if _, serr := os.Stat(state); err == nil && serr == nil && cond(st) {
			return true
		}
		if w.exited() {
			t.Fatalf("pi-otel watch exited early:\n%s", w.stderr)
		}
		return false
	}, func() string { return fmt.Sprintf("the state never got there:\n%+v\n%s", st, w.stderr) })
	return st
}

func committed(st sessionwatch.State) int64 {
	var n int64
	for _, f := range st.Files {
		n += f.Committed
	}
	return n
}

// scanned is true once the first scan is complete.
func scanned(st sessionwatch.State) bool { return st.Scan == nil }

// TestWatchKill9MidBackfill: a watch --since all killed by SIGKILL in the
// middle of a backfill, then started again, exports every span of the
// history; the only spans sent twice are of runs the state had not yet
// committed at the kill (the batch in flight), not the whole pass.
func TestWatchKill9MidBackfill(t *testing.T) {
	t.Parallel()
	h := historytest.Write(t, 300, 120_000_000)
	out := t.TempDir()
	state := filepath.Join(out, "watch.json")
	args := func(traces string) []string {
		return []string{"--quiet", "--since", "all", "--state", state, "--traces-exporter", "file", "--traces-file", traces,
			"--metrics-exporter", "none", h.Dir}
	}
	first := filepath.Join(out, "traces-1.jsonl")
	w := startHistWatch(t, nil, args(first)...)
	// Past the first commit and a little into the next batch, so that
	// something traced and exported is not committed yet.
	c1 := committed(waitState(t, w, state, func(st sessionwatch.State) bool { return st.Scan != nil && committed(st) > 0 }))
	waitState(t, w, state, func(st sessionwatch.State) bool { return st.Scan != nil && committed(st) > c1 })
	size := func() int64 {
		fi, err := os.Stat(first)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	atCommit := size()
	wait.For(t, hangGuard, func() bool { return size() > atCommit || w.exited() },
		func() string { return "nothing exported after the second commit" })
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-w.done
	atKill, _, err := sessionwatch.LoadState(state)
	if err != nil {
		t.Fatal(err)
	}
	if scanned(atKill) {
		t.Fatal("the backfill was over before the kill: make the history larger")
	}

	second := filepath.Join(out, "traces-2.jsonl")
	w = startHistWatch(t, nil, args(second)...)
	waitState(t, w, state, scanned)
	w.stop(t)

	want := historytest.Replay(t, h.Paths)
	// What the state had not committed at the kill: the only runs the
	// second start may trace again.
	open := historytest.ReplayFrom(t, h.Paths, func(p string) int64 {
		fs, _ := atKill.File(p)
		return fs.Committed
	})
	got := historytest.ExportedKilled(t, first)
	for id, n := range historytest.Exported(t, second) {
		got[id] += n
	}
	var dups, missing, wrong int
	for id, n := range got {
		if n > 1 {
			dups += n - 1
			if _, ok := open.Spans[id]; !ok {
				wrong++
			}
		}
	}
	for id := range want.Spans {
		if got[id] == 0 {
			missing++
		}
	}
	t.Logf("%d files, %.0f MB, %d spans; committed at the kill %.1f MB; sent twice: %d spans",
		len(h.Paths), float64(h.Bytes)/1e6, len(want.Spans), float64(committed(atKill))/1e6, dups)
	if missing > 0 {
		t.Errorf("%d spans of the history never exported", missing)
	}
	if wrong > 0 {
		t.Errorf("%d spans committed before the kill were sent again", wrong)
	}
	if dups > len(want.Spans)/2 {
		t.Errorf("%d of %d spans sent twice: the kill repeated most of the pass", dups, len(want.Spans))
	}
}

// switchCollector answers no export while silent is set, as a wedged
// collector: the export waits for its deadline. Otherwise it takes them.
func switchCollector(silent *atomic.Bool) *otlptest.Receiver {
	return &otlptest.Receiver{Answer: func(ctx context.Context, _ otlptest.Export) error {
		if silent.Load() {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}
}

// TestWatchSilentCollectorThenSpoolDrains: a backfill into a collector
// that accepts and never answers keeps its spans in the spool, and the
// state moves past them (spooled is delivered: nothing is traced again).
// When the collector answers again on the same connection, the same
// watch, not restarted, sends a new run and the spool as soon as the new
// run goes through. Every span arrives once.
func TestWatchSilentCollectorThenSpoolDrains(t *testing.T) {
	t.Parallel()
	addr := freeport.Addr(t)
	var silent atomic.Bool
	silent.Store(true)
	c := switchCollector(&silent)
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.ServeGRPC(t, lis)

	h := historytest.Write(t, 8, 400_000)
	spool := t.TempDir()
	state := filepath.Join(t.TempDir(), "watch.json")
	env := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_TIMEOUT=1000", "OTEL_BSP_EXPORT_TIMEOUT=1500", "OTEL_BSP_SCHEDULE_DELAY=50",
		"OTEL_SERVICE_NAME=e2e-watch-silent", "OTEL_METRICS_EXPORTER=none", "PI_OTEL_SPOOL_DIR=" + spool,
	}
	w := startHistWatch(t, env, "--since", "all", "--settle", "500ms", "--state", state, h.Dir)
	st := waitState(t, w, state, scanned)
	if committed(st) == 0 {
		t.Fatalf("the state did not move past spooled spans: %+v\n%s", st, w.stderr)
	}
	if n := len(c.SpanIDs()); n != 0 {
		t.Fatalf("the silent collector took %d spans", n)
	}
	spooled, _ := filepath.Glob(filepath.Join(spool, "*.otlp"))
	if len(spooled) == 0 {
		t.Fatalf("nothing in the spool\n%s", w.stderr)
	}

	// The collector answers again, on the same connection (a proxy that
	// black-holed and now forwards); a new session in the watched folder
	// goes through, and the spool with it.
	silent.Store(false)
	back := time.Now()
	fresh := writeFresh(t, h, "fresh-after-outage")
	want := historytest.Replay(t, append(append([]string(nil), h.Paths...), fresh))
	// A sent file leaves the spool once the collector's answer is back,
	// a moment after the collector counted its spans.
	spoolFiles := func() []string { f, _ := filepath.Glob(filepath.Join(spool, "*.otlp")); return f }
	wait.Until(time.Minute, func() bool { return len(c.SpanIDs()) >= len(want.Spans) && len(spoolFiles()) == 0 })
	took := time.Since(back)
	left := spoolFiles()
	w.stop(t)
	got := c.SpanIDs()
	var dups, missing int
	for id := range want.Spans {
		switch n := got[id]; {
		case n == 0:
			missing++
		case n > 1:
			dups += n - 1
		}
	}
	t.Logf("%d spans: %d spool files before, %d after; all in %s after the collector answered",
		len(want.Spans), len(spooled), len(left), took.Round(10*time.Millisecond))
	if missing+dups > 0 || len(got) != len(want.Spans) {
		t.Errorf("the collector got %d spans, want %d: %d missing, %d twice", len(got), len(want.Spans), missing, dups)
	}
	if len(left) != 0 {
		t.Errorf("%d files left in the spool while the collector answered", len(left))
	}
	if t.Failed() {
		t.Logf("watch's stderr:\n%s", w.stderr)
	}
}

// startHistoryCollector starts historyCollector in front of j; it returns
// the process and its OTLP/gRPC address.
func startHistoryCollector(t *testing.T, name string, j *jaegertest.Jaeger) (*otelcol.Process, string) {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "collector.yaml")
	if err := os.WriteFile(conf, []byte(historyCollector), 0o644); err != nil {
		t.Fatal(err)
	}
	otlp := freeport.Addr(t)
	health := freeport.Addr(t)
	col := otelcol.Start(t, otelcol.Options{Name: name, Binary: collectortest.Binary(t), Config: conf, Health: health,
		Env: map[string]string{"HEALTH": health, "OTLP": otlp, "JAEGER": j.OTLPGRPC}})
	return col, otlp
}

// historyCollector is a Collector of the project's distribution that
// forwards every span it receives to Jaeger, unsampled.
const historyCollector = `extensions:
  health_check:
    endpoint: ${env:HEALTH}
    path: /status
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: ${env:OTLP}
processors:
  batch: {}
exporters:
  otlp:
    endpoint: ${env:JAEGER}
    tls:
      insecure: true
service:
  extensions: [health_check]
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlp]
`

// TestWatchHistoryIntoJaeger: a backfill over OTLP into the real
// Collector, which forwards to the real Jaeger, stores every trace of the
// history with exactly replay's span ids, each once.
func TestWatchHistoryIntoJaeger(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	_, otlp := startHistoryCollector(t, "history collector", j)
	h := historytest.Write(t, 20, 2_000_000)
	state := filepath.Join(t.TempDir(), "watch.json")
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_SERVICE_NAME=e2e-watch-history", "OTEL_METRICS_EXPORTER=none"}
	w := startHistWatch(t, env, "--quiet", "--since", "all", "--state", state, h.Dir)
	waitState(t, w, state, scanned)
	w.stop(t)

	want := historytest.Replay(t, h.Paths)
	byTrace := want.ByTrace()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var bad int
	for id, spans := range byTrace {
		tr := j.WaitTrace(t, ctx, id, len(spans))
		seen := map[string]int{}
		for _, s := range tr.Spans {
			seen[s.SpanID]++
		}
		for s := range spans {
			if seen[s] != 1 {
				bad++
			}
		}
		if len(seen) != len(spans) {
			bad++
		}
	}
	t.Logf("%d traces, %d spans in Jaeger", len(byTrace), len(want.Spans))
	if bad > 0 {
		t.Errorf("%d spans missing, twice or not replay's", bad)
	}
}

// TestWatchCollectorStoppedThenContinued: a real Collector, forwarding to
// the real Jaeger, is frozen by SIGSTOP (its port accepts, nothing
// answers) while a backfill runs, so the spans go to the spool and the
// state moves past them. After SIGCONT the same connection answers again:
// the running watch, not restarted, sends a new run and the spool within
// seconds, and Jaeger holds every span of the history once.
func TestWatchCollectorStoppedThenContinued(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	col, otlp := startHistoryCollector(t, "frozen collector", j)
	frozen := true
	if err := syscall.Kill(col.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if frozen {
			_ = syscall.Kill(col.Pid(), syscall.SIGCONT)
		}
	})

	h := historytest.Write(t, 8, 400_000)
	spool := t.TempDir()
	state := filepath.Join(t.TempDir(), "watch.json")
	env := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_EXPORTER_OTLP_TIMEOUT=1000", "OTEL_BSP_EXPORT_TIMEOUT=1500", "OTEL_BSP_SCHEDULE_DELAY=50",
		"OTEL_SERVICE_NAME=e2e-watch-frozen", "OTEL_METRICS_EXPORTER=none", "PI_OTEL_SPOOL_DIR=" + spool,
	}
	started := time.Now()
	w := startHistWatch(t, env, "--since", "all", "--settle", "500ms", "--state", state, h.Dir)
	st := waitState(t, w, state, scanned)
	if committed(st) == 0 {
		t.Fatalf("the state did not move past spooled spans: %+v\n%s", st, w.stderr)
	}
	spooled, _ := filepath.Glob(filepath.Join(spool, "*.otlp"))
	if len(spooled) == 0 {
		t.Fatalf("nothing in the spool\n%s", w.stderr)
	}
	// Real time is the point: gRPC's timer runs in the watch process.
	// Continued just past gRPC's MinConnectTimeout (20s) from the first
	// export: gRPC has closed the connection whose handshake never came and
	// waits its reconnection backoff (1s). pi-otel once took that error for
	// a protocol mismatch and failed every export at once, so that the new
	// run went to the spool too.
	time.Sleep(time.Until(started.Add(20*time.Second + 500*time.Millisecond)))

	if err := syscall.Kill(col.Pid(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	frozen = false
	back := time.Now()
	fresh := writeFresh(t, h, "fresh-after-sigcont")
	// The new run's spans, read back from Jaeger.
	freshRun := historytest.Replay(t, []string{fresh})
	if len(freshRun.Spans) == 0 {
		t.Fatal("the new session file gives no span")
	}
	inJaeger := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, ids := 0, map[string]bool{}
		for _, id := range freshRun.Spans {
			ids[id] = true
		}
		for id := range ids {
			if tr, err := j.Trace(ctx, id); err == nil && tr != nil {
				n += len(tr.Spans)
			}
		}
		return n >= len(freshRun.Spans)
	}
	var drained, sent time.Duration
	wait.Until(time.Minute, func() bool {
		if left, _ := filepath.Glob(filepath.Join(spool, "*.otlp")); len(left) == 0 && drained == 0 {
			drained = time.Since(back)
		}
		if sent == 0 && inJaeger() {
			sent = time.Since(back)
		}
		return drained != 0 && sent != 0
	})
	left, _ := filepath.Glob(filepath.Join(spool, "*.otlp"))
	w.stop(t)
	t.Logf("%d spool files before, %d after; after SIGCONT, the spool was empty in %s, the new run in Jaeger in %s",
		len(spooled), len(left), drained.Round(10*time.Millisecond), sent.Round(10*time.Millisecond))
	if sent == 0 {
		t.Errorf("the new run was not in Jaeger within a minute of SIGCONT")
	}
	if len(left) != 0 {
		t.Errorf("%d files left in the spool while the collector answered", len(left))
	}

	// The whole history waited in the spool, and the same watch sent it:
	// none is said to wait for another pi-otel. The new run goes straight
	// once gRPC has reconnected; an export in the second or so before
	// that (a loaded machine) is spooled and sent too, not lost. (The
	// protocol-mismatch bug above kept the new run from Jaeger.)
	history := historytest.Replay(t, h.Paths)
	m := regexp.MustCompile(`(\d+) spans? delivered late, from the spool`).FindStringSubmatch(w.stderr.String())
	late := -1
	if m != nil {
		late, _ = strconv.Atoi(m[1])
	}
	if late < len(history.Spans) || late > len(history.Spans)+len(freshRun.Spans) {
		t.Errorf("spans spooled and sent: %v, want the history's %d and at most the new run's %d more", m, len(history.Spans), len(freshRun.Spans))
	} else if late > len(history.Spans) {
		t.Logf("%d of the new run's spans went through the spool, exported before gRPC reconnected", late-len(history.Spans))
	}
	if strings.Contains(w.stderr.String(), " kept in ") {
		t.Errorf("the summary says spans wait in the spool, which is empty:\n%s", w.stderr)
	}
	want := historytest.Replay(t, append(append([]string(nil), h.Paths...), fresh))
	byTrace := want.ByTrace()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var missing, dups, foreign int
	for id, spans := range byTrace {
		tr := j.WaitTrace(t, ctx, id, len(spans))
		seen := map[string]int{}
		for _, s := range tr.Spans {
			seen[s.SpanID]++
		}
		for s, n := range seen {
			switch {
			case !spans[s]:
				foreign++
			case n > 1:
				dups += n - 1
			}
		}
		for s := range spans {
			if seen[s] == 0 {
				missing++
			}
		}
	}
	t.Logf("%d traces, %d spans in Jaeger", len(byTrace), len(want.Spans))
	if missing+dups+foreign > 0 {
		t.Errorf("Jaeger: %d spans missing, %d twice, %d not replay's", missing, dups, foreign)
	}
	if t.Failed() {
		t.Logf("watch's stderr:\n%s", w.stderr)
	}
}

// writeFresh writes a real session under a new session id into the first
// folder of h, one watch already follows (a file written whole into a new
// folder before watch adds that folder's watch waits for the rescan), and
// returns its path.
func writeFresh(t *testing.T, h historytest.History, id string) string {
	t.Helper()
	src, err := os.ReadFile(repo.Path("testdata/sessions/pi-1.6.0/two-prompts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(filepath.Dir(h.Paths[0]), "fresh.jsonl")
	if err := os.WriteFile(fresh, historytest.WithSessionID(t, src, id), 0o644); err != nil {
		t.Fatal(err)
	}
	return fresh
}
