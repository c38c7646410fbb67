package app

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A process Pi leaves behind can keep Pi's stdout open; pi-otel must not
// wait for it once Pi has exited, and must lose none of Pi's output.
func TestRunDoesNotWaitForAnOrphanHoldingStdout(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "orphan.pid")
	script := `sleep 60 & echo $! > ` + pidFile + `; printf '{"type":"agent_start"}\n{"type":"agent_settled"}\nlast'`
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			_ = exec.Command("kill", strings.TrimSpace(string(b))).Run()
		}
	})
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(Env{
			Args:   []string{"run", "--traces-exporter", "none", "--", "sh", "-c", script},
			Stdout: &stdout, Stderr: &stderr,
			Getenv: func(string) string { return "" },
		})
	}()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("pi-otel waited for the orphan's end of the pipe")
	}
	if want := "{\"type\":\"agent_start\"}\n{\"type\":\"agent_settled\"}\nlast"; stdout.String() != want {
		t.Fatalf("stdout %q, want %q", stdout.String(), want)
	}
	if !strings.Contains(stderr.String(), "1 trace") {
		t.Fatalf("summary: %s", stderr.String())
	}
}
