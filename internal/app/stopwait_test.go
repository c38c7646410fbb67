package app_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// A second watch with the collector still down and the first one's spans
// in the spool ends at once at SIGTERM, as with an empty spool: the
// spool's send, asleep in the exporter's backoff, used to hold the exit
// for the whole --flush-timeout. The spool keeps the spans for the next
// process. The rule is "within a second of a signal"; 3 s leaves room for
// a loaded machine, and the fault costs the flush timeout, 10 s here.
func TestWatchWithSpoolEndsAtSignalWhenCollectorIsDown(t *testing.T) {
	bin := piOtel(t)
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			spool := filepath.Join(t.TempDir(), "spool")
			env := []string{"PI_OTEL_SPOOL_DIR=" + spool, "OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + freeport.Addr(t)}
			first := runBin(t, bin, binRun{args: []string{"replay", "--flush-timeout", "1s", captures + "bash-tool.jsonl"}, env: env})
			if !strings.Contains(string(first.stderr), "7 kept in "+spool) {
				t.Fatalf("the first run spooled nothing:\n%s", first.stderr)
			}
			sessions := t.TempDir()
			signalled := make(chan time.Time, 1)
			r := runBin(t, bin, binRun{
				args: []string{"watch", "--flush-timeout", "10s", "--state", filepath.Join(t.TempDir(), "state.json"), sessions},
				env:  env,
				started: func(p *os.Process) {
					go func() {
						// Once the spool is being sent (claimed), or after a
						// second on HTTP, whose failed send returns it at once.
						wait.Until(time.Second, func() bool { return claimed(spool) })
						signalled <- time.Now()
						_ = p.Signal(syscall.SIGTERM)
					}()
				},
			})
			took := time.Since(<-signalled)
			t.Logf("exit %v after SIGTERM with the flush timeout at 10s", took.Round(time.Millisecond))
			if took > 3*time.Second {
				t.Errorf("exit %v after SIGTERM, want within a second:\n%s", took, r.stderr)
			}
			if n := spoolFiles(t, spool); n != 1 {
				t.Errorf("spool holds %d files after the second process, want the first one's still:\n%s", n, r.stderr)
			}
		})
	}
}

// claimed reports a spool file being sent.
func claimed(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".sending-") {
			return true
		}
	}
	return false
}

// spoolFiles counts the spooled files, claimed or not.
func spoolFiles(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".otlp") {
			n++
		}
	}
	return n
}

// A signal while watch waits at exit for a collector that never answers
// ends the wait, as the wait line says ("Ctrl-C stops waiting"): watch
// used to sit out the flush timeout, or the export's --timeout (both 10
// minutes here; runBin's guard fails the test long before). The signal
// comes once the wait line says the wait has begun.
func TestWatchSignalDuringExitWaitEndsIt(t *testing.T) {
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
		args: []string{"watch", "--since", "all", "--settle", "100ms", "--flush-timeout", "10m", "--timeout", "10m", "--endpoint", "http://" + addr,
			"--state", filepath.Join(t.TempDir(), "state.json"), filepath.Dir(dir)},
		env:     []string{"PI_OTEL_SPOOL_DIR=none", "OTEL_BSP_SCHEDULE_DELAY=100"},
		started: signalOnExport(conns, syscall.SIGTERM),
		onStderr: func(line []byte, p *os.Process) {
			if bytes.HasPrefix(line, []byte("pi-otel: waiting for ")) {
				_ = p.Signal(syscall.SIGINT) // into the wait, which the line says has begun
			}
		},
	})
	if n := strings.Count(string(r.stderr), "pi-otel: 1 trace"); n != 1 {
		t.Errorf("%d summary lines, want 1:\n%s", n, r.stderr)
	}
}
