package app

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// A process Pi leaves behind (`cmd &`) keeps Pi's stdout open. As with a
// plain pipe, its late output still reaches the consumer; but the trace is
// Pi's, so it is finished and flushed (the summary line) when Pi exits,
// not when the leftover does.
func TestRunForwardsALeftoverButFinishesWithPi(t *testing.T) {
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	script := `(while [ ! -e ` + release + ` ]; do sleep 0.05; done; echo late) &
printf '{"type":"agent_start"}\n{"type":"agent_settled"}\n'`
	var stdout bytes.Buffer
	stderr := &proc.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- Main(t.Context(), Env{
			Args:   []string{"run", "--traces-exporter", "none", "--", "sh", "-c", script},
			Stdout: &stdout, Stderr: stderr,
			Getenv: func(string) string { return "" },
		})
	}()
	// The summary comes while the leftover still holds the pipe.
	if !wait.Until(30*time.Second, func() bool { return strings.Contains(stderr.String(), "1 trace") }) {
		os.WriteFile(release, nil, 0o600)
		t.Fatalf("no summary while the leftover ran: the trace waited for it\n%s", stderr.String())
	}
	os.WriteFile(release, nil, 0o600)
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := "{\"type\":\"agent_start\"}\n{\"type\":\"agent_settled\"}\nlate\n"; stdout.String() != want {
		t.Fatalf("stdout %q, want %q", stdout.String(), want)
	}
}
