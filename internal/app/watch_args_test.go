package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/outfile"
)

// watchFor runs watch with args until it returns or d has passed, and
// returns its exit code and stderr.
func watchFor(t *testing.T, d time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var errb outfile.Buffer
	code := watch(ctx, Env{Stdin: strings.NewReader(""), Stdout: &outfile.Buffer{}, Stderr: &errb,
		Getenv: func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] }}, args)
	return code, errb.String()
}

// An error that ends watch comes before the summary, which stays the
// last line.
func TestWatchErrorBeforeSummary(t *testing.T) {
	tmp := t.TempDir()
	state := filepath.Join(tmp, "watch.json")
	writeScript(t, state, "garbage")
	code, stderr := watchFor(t, 5*time.Second, "--traces-exporter", "none", "--state", state, tmp)
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != 1 || len(lines) < 2 {
		t.Fatalf("exit %d, want 1 and an error:\n%s", code, stderr)
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "pi-otel: 0 traces") {
		t.Errorf("the last line is %q, want the summary:\n%s", last, stderr)
	}
	if prev := lines[len(lines)-2]; !strings.Contains(prev, "state file "+state+" is damaged") {
		t.Errorf("the line before the summary is %q, want the error:\n%s", prev, stderr)
	}
}
