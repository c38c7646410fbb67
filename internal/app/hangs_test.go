package app_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// A --traces-file FIFO that nobody reads: pi-otel neither blocks Pi's start
// nor outlives the flush timeout, exits with the child's code, and says
// what was lost.
func TestFIFOTracesFileNobodyReads(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := mainRun(t, "run", "--traces-file", fifo, "--flush-timeout", "300ms", "--",
		"sh", "-c", `cat "$0"; exit 5`, captures+"bash-tool.jsonl")
	if code != 5 {
		t.Errorf("exit %d, want the child's 5", code)
	}
	if !bytes.Contains(stderr, []byte("pi-otel: 1 trace")) || !(bytes.Contains(stderr, []byte("7 failed")) || bytes.Contains(stderr, []byte("7 spans dropped"))) {
		t.Errorf("the summary does not say spans were lost:\n%s", stderr)
	}
}

// A stderr whose reader stopped reading under the console exporter.
func TestStalledStderrUnderConsoleExporter(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	// The smallest pipe, so that a few trees fill it.
	shrinkPipe(t, pw)
	var stdout bytes.Buffer
	code := app.Main(t.Context(), app.Env{
		Args: []string{"run", "--flush-timeout", "300ms", "--",
			"sh", "-c", `for i in 1 2 3 4 5 6 7 8 9 10; do cat "$0"; done; exit 6`, captures + "bash-tool.jsonl"},
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: pw,
		Getenv: func(string) string { return "" },
	})
	if code != 6 {
		t.Errorf("exit %d, want the child's 6", code)
	}
}

// Ctrl-C while pi-otel flushes at exit ends the flush, not pi-otel: the
// exit code is Pi's and the summary line still comes.
func TestSignalDuringExitFlush(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The flush waits for a reader that never comes, far longer than the
	// test lets it; only the signal can end it.
	r := runBin(t, bin, binRun{
		args: []string{"run", "--traces-file", fifo, "--flush-timeout", "10m", "--",
			"sh", "-c", `cat "$0"; echo done; exit 4`, captures + "bash-tool.jsonl"},
		onStderr: func(line []byte, p *os.Process) {
			if bytes.HasPrefix(line, []byte("pi-otel: waiting for ")) {
				_ = p.Signal(syscall.SIGINT) // into the flush, which the line says is waiting
			}
		},
	})
	if r.code != 4 {
		t.Fatalf("pi-otel ended with %d, want exit 4\n%s", r.code, r.stderr)
	}
	if n := strings.Count(string(r.stderr), "pi-otel: 1 trace"); n != 1 {
		t.Errorf("%d summary lines:\n%s", n, r.stderr)
	}
}

// Replaying a FIFO waits for its writer; SIGINT and SIGTERM still end
// pi-otel, with or without --follow. (runBin fails the test if pi-otel
// dies of the signal instead of handling it, or does not end.)
func TestReplayFIFOWithoutWriterIsInterruptible(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	for _, c := range []struct {
		name string
		args []string
		sig  syscall.Signal
	}{
		{"replay SIGINT", []string{"replay"}, syscall.SIGINT},
		{"replay SIGTERM", []string{"replay"}, syscall.SIGTERM},
		{"follow SIGINT", []string{"replay", "--follow"}, syscall.SIGINT},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !canObserve {
				t.Skip("cannot see here whether a process waits in a FIFO's open")
			}
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			runBin(t, bin, binRun{
				args: append(c.args, fifo),
				started: func(p *os.Process) {
					go func() {
						// Should it never do so, runBin's guard ends it and fails the test.
						wait.Until(time.Minute, func() bool { return inFIFOOpen(p.Pid) })
						_ = p.Signal(c.sig)
					}()
				},
			})
		})
	}
}

// Replaying /dev/zero, a line with no end, holds about --max-line-size
// (256 MiB), not the gigabytes read, and a signal ends it within a second,
// from a file, followed, or on stdin. (It grew by gigabytes a second and
// ignored SIGINT for over 20 s.)
func TestReplayDevZeroEndsAtSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("reads gigabytes")
	}
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer zero.Close()
	bin := piOtel(t)
	for _, c := range []struct {
		name string
		args []string
		sig  syscall.Signal
	}{
		{"file SIGINT", []string{"replay", "/dev/zero"}, syscall.SIGINT},
		{"follow SIGTERM", []string{"replay", "--follow", "/dev/zero"}, syscall.SIGTERM},
		{"stdin SIGINT", []string{"replay", "-"}, syscall.SIGINT},
	} {
		t.Run(c.name, func(t *testing.T) {
			type signalled struct {
				at     time.Time
				peakKB int
			}
			sent := make(chan signalled, 1)
			r := runBin(t, bin, binRun{
				args:  c.args,
				stdin: zero,
				started: func(p *os.Process) {
					go func() {
						// Past the bound: a loaded machine may take
						// seconds to read that far.
						wait.Until(time.Minute, func() bool { n := readBytes(p.Pid); return n < 0 || n > pastBound })
						peak := statusKB(p.Pid, "VmHWM")
						at := time.Now()
						_ = p.Signal(c.sig)
						sent <- signalled{at, peak}
					}()
				},
			})
			end := time.Now()
			s := <-sent
			took, peakKB := end.Sub(s.at), s.peakKB
			t.Logf("peak RSS %d MiB; ended %v after the signal", peakKB>>10, took.Round(time.Millisecond))
			if took > time.Second {
				t.Errorf("ended %v after the signal, want within a second", took)
			}
			if peakKB > 512<<10 {
				t.Errorf("peak RSS %d MiB, want under 512 MiB", peakKB>>10)
			}
			if r.code != 1 || !strings.Contains(string(r.stderr), "line 1 is longer than 256 MiB (--max-line-size)") {
				t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
		})
	}
}

// pastBound is well past the 256 MiB --max-line-size a line is held to.
const pastBound = 320 << 20

// readBytes is how many bytes process pid has read (rchar of
// /proc/PID/io); -1 once it cannot be read (the process is gone).
func readBytes(pid int) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "rchar:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return -1
}

// statusKB reads a field of /proc/PID/status, in KiB; 0 where there is
// no /proc.
func statusKB(pid int, field string) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}
