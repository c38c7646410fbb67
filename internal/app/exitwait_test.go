package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// A garbled OTEL_EXPORTER_OTLP_ENDPOINT is ignored with a warning, and
// ignored means unset: the traces go where they go without it, with no
// export to the default endpoint and no wait for it at exit.
func TestGarbledEndpointActsUnset(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	args := []string{"run", "--", "cat", captures + "bash-tool.jsonl"}
	start := time.Now()
	unset := runBin(t, bin, binRun{args: args, env: []string{"PI_OTEL_SPOOL_DIR=none"}})
	unsetTook := time.Since(start)
	for _, raw := range []string{"localhost:notaport", "ht tp://x y", "http://[::1"} {
		start := time.Now()
		r := runBin(t, bin, binRun{args: args, env: []string{"PI_OTEL_SPOOL_DIR=none", "OTEL_EXPORTER_OTLP_ENDPOINT=" + raw}})
		t.Logf("%q: %v (unset: %v)", raw, time.Since(start).Round(time.Millisecond), unsetTook.Round(time.Millisecond))
		stderr := string(r.stderr)
		if r.code != unset.code {
			t.Errorf("%q: exit %d, unset %d", raw, r.code, unset.code)
		}
		if !strings.Contains(stderr, "ignoring OTEL_EXPORTER_OTLP_ENDPOINT") {
			t.Errorf("%q: no warning:\n%s", raw, stderr)
		}
		for _, not := range []string{"otlp", "no collector", "waiting for"} {
			if strings.Contains(stderr, not) {
				t.Errorf("%q: stderr mentions %q, as if exporting:\n%s", raw, not, stderr)
			}
		}
		if got, want := summaryLine(stderr), summaryLine(string(unset.stderr)); got != want {
			t.Errorf("%q: summary %q, unset %q", raw, got, want)
		}
	}
}

// A collector that accepts connections and never answers: once Pi has
// ended, pi-otel says in one line what it waits for and for how long,
// then gives up at the flush timeout. A flush with nothing to wait for
// says nothing.
func TestExitWaitSaysSo(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	addr := collectortest.BlackHole(t)
	args := []string{"run", "--flush-timeout", "2s", "--endpoint", "http://" + addr, "--", "cat", captures + "bash-tool.jsonl"}
	start := time.Now()
	r := runBin(t, bin, binRun{args: args, env: []string{"PI_OTEL_SPOOL_DIR=none"}})
	t.Logf("exit after %v with a silent collector, flush timeout 2s", time.Since(start).Round(time.Millisecond))
	stderr := string(r.stderr)
	if n := strings.Count(stderr, "waiting for"); n != 1 {
		t.Fatalf("%d wait lines, want 1:\n%s", n, stderr)
	}
	want := "pi-otel: waiting for otlp grpc " + addr + " to take the last telemetry, at most 2s (--flush-timeout)"
	wait := strings.Index(stderr, want)
	if wait < 0 {
		t.Errorf("no line %q:\n%s", want, stderr)
	}
	if sum := strings.Index(stderr, "pi-otel: 1 trace"); sum < wait {
		t.Errorf("the wait line does not come before the summary:\n%s", stderr)
	}

	quick := runBin(t, bin, binRun{args: []string{"run", "--traces-exporter", "none", "--", "cat", captures + "bash-tool.jsonl"}})
	if strings.Contains(string(quick.stderr), "waiting for") {
		t.Errorf("a flush with nothing to wait for says it waits:\n%s", quick.stderr)
	}
}

// summaryLine is the "pi-otel: N trace(s)" line at exit, trace ids cut.
func summaryLine(stderr string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "pi-otel: 1 trace") || strings.Contains(l, " traces, ") {
			if i := strings.Index(l, " ("); i >= 0 {
				if j := strings.Index(l[i:], ")"); j >= 0 {
					l = l[:i] + l[i+j+1:]
				}
			}
			return l
		}
	}
	return ""
}

// watch's last flush at SIGTERM says so too when the collector hangs.
func TestWatchExitWaitSaysSo(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	addr, conns := collectortest.BlackHoleConns(t)
	dir := filepath.Join(t.TempDir(), "sessions", "--work--")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(repo.Path("testdata/sessions/pi-1.6.0/bash-tool.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, bin, binRun{
		args: []string{"watch", "--since", "all", "--settle", "100ms", "--flush-timeout", "2s", "--endpoint", "http://" + addr,
			"--state", filepath.Join(t.TempDir(), "state.json"), filepath.Dir(dir)},
		env:     []string{"PI_OTEL_SPOOL_DIR=none", "OTEL_BSP_SCHEDULE_DELAY=100"},
		started: signalOnExport(conns, syscall.SIGTERM),
	})
	if n := strings.Count(string(r.stderr), "pi-otel: waiting for otlp grpc "+addr); n != 1 {
		t.Errorf("%d wait lines at watch's exit, want 1:\n%s", n, r.stderr)
	}
}

// signalOnExport sends sig to p once the black hole has taken a
// connection: an export is under way, so the session has been traced
// and the flush at exit has something to wait for.
func signalOnExport(conns func() int, sig syscall.Signal) func(*os.Process) {
	return func(p *os.Process) {
		go func() {
			// Should it never come, runBin's guard ends p and fails the test.
			wait.Until(time.Minute, func() bool { return conns() > 0 })
			_ = p.Signal(sig)
		}()
	}
}
