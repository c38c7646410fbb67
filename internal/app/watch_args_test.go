package app

import (
	"context"
	"os"
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

// A DIR that is a file (watch /etc/passwd) holds nothing to follow, ever:
// it is refused at once, exit 2, before the state is locked, rather than
// followed in silence until a signal. A DIR not there yet is waited for.
func TestWatchRefusesADIRThatIsAFile(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "passwd")
	writeScript(t, file, "root:x:0:0::/root:/bin/sh\n")
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(tmp, "state", "watch.json")
	start := time.Now()
	code, stderr := watchFor(t, 5*time.Second, "--traces-exporter", "none", "--state", state, tmp, file, link)
	if code != 2 || time.Since(start) > 2*time.Second {
		t.Fatalf("exit %d after %v, want 2 at once:\n%s", code, time.Since(start), stderr)
	}
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "pi-otel watch: "+file+" is not a folder;") ||
		!strings.HasPrefix(lines[1], "pi-otel watch: "+link+" is not a folder;") {
		t.Errorf("want one line for each of %s and %s:\n%s", file, link, stderr)
	}
	if _, err := os.Stat(filepath.Dir(state)); err == nil {
		t.Errorf("the state's folder was created for a refused command")
	}

	code, stderr = watchFor(t, 300*time.Millisecond, "--traces-exporter", "none", "--state", state, filepath.Join(tmp, "later"))
	if code != 0 || !strings.Contains(stderr, "does not exist yet") {
		t.Errorf("a DIR not there yet: exit %d, want 0 once stopped, and waited for:\n%s", code, stderr)
	}
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
