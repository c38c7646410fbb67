package app_test

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-otel/pi-otel/internal/app"
)

// A --traces-file FIFO that nobody reads: pi-otel neither blocks Pi's start
// nor outlives the flush timeout, exits with the child's code, and says
// what was lost.
func TestFIFOTracesFileNobodyReads(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := app.Main(app.Env{
		Args: []string{"run", "--traces-file", fifo, "--flush-timeout", "300ms", "--",
			"sh", "-c", `cat "$0"; exit 5`, captures + "bash-tool.jsonl"},
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" },
	})
	if code != 5 {
		t.Errorf("exit %d, want the child's 5", code)
	}
	if !strings.Contains(stderr.String(), "pi-otel: 1 trace") || !(strings.Contains(stderr.String(), "7 failed") || strings.Contains(stderr.String(), "7 spans dropped")) {
		t.Errorf("the summary does not say spans were lost:\n%s", stderr.String())
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
	if _, err := unix.FcntlInt(pw.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	code := app.Main(app.Env{
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
	bin := buildBin(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// The flush waits for a reader that never comes, far longer than the
	// test lets it; only the signal can end it.
	cmd := exec.Command(bin, "run", "--traces-file", fifo, "--flush-timeout", "10m", "--",
		"sh", "-c", `cat "$0"; echo done; exit 4`, captures+"bash-tool.jsonl")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && lines.Text() != "done" {
	}
	go io.Copy(io.Discard, stdout)
	time.Sleep(200 * time.Millisecond) // into the flush
	cmd.Process.Signal(syscall.SIGINT)
	err = waitOrKill(t, cmd)
	ee, _ := err.(*exec.ExitError)
	if ee == nil || ee.ExitCode() != 4 {
		t.Fatalf("pi-otel ended with %v, want exit 4\n%s", err, stderr.String())
	}
	if n := strings.Count(stderr.String(), "pi-otel: 1 trace"); n != 1 {
		t.Errorf("%d summary lines:\n%s", n, stderr.String())
	}
}

func buildBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pi-otel")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/pi-otel/pi-otel/cmd/pi-otel").CombinedOutput(); err != nil {
		t.Fatalf("building pi-otel: %v\n%s", err, out)
	}
	return bin
}

// Replaying a FIFO waits for its writer; SIGINT and SIGTERM still end
// pi-otel, with or without --follow.
func TestReplayFIFOWithoutWriterIsInterruptible(t *testing.T) {
	bin := buildBin(t)
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
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd := exec.Command(bin, append(c.args, fifo)...)
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // blocked in open
			cmd.Process.Signal(c.sig)
			err := waitOrKill(t, cmd)
			if ee, ok := err.(*exec.ExitError); ok && !ee.Exited() {
				t.Fatalf("killed by the signal instead of handling it: %v\n%s", err, stderr.String())
			}
		})
	}
}

// waitOrKill waits for cmd; a guard against a hang, not a timing check.
func waitOrKill(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("still running 30s after the signal")
		return nil
	}
}
