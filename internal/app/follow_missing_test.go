package app_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// replay --follow of a file that is not there yet says at once that it
// waits for it, as tail -F does; interrupted before anything came, it
// says nothing was traced and exits 1, not 0.
func TestFollowMissingFileSaysItWaits(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	missing := filepath.Join(t.TempDir(), "missing.jsonl")
	cmd := exec.Command(bin, "replay", "--follow", missing)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	cmd.SysProcAttr = proc.Group()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A guard against a hang, not a performance assertion.
	guard := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
	defer guard.Stop()
	r := bufio.NewReader(pipe)
	first, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("no first line: %v", err)
	}
	if want := "pi-otel: " + missing + " does not exist yet; waiting for it to appear (Ctrl-C to stop)\n"; first != want {
		t.Errorf("first line %q, want %q", first, want)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want 1\n%s%s", err, first, rest)
	}
	if want := "pi-otel: interrupted before " + missing + " had any records: nothing traced\n"; string(rest) != want {
		t.Errorf("after Ctrl-C: %q, want %q", rest, want)
	}
}

// The exporters parse OTEL_* themselves too; what they log about a garbled
// value must not reach stderr unprefixed, beside pi-otel's own warning.
func TestGarbledEndpointEnvOnlyPrefixedLines(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	addr := freeport.Addr(t) // nothing listens there: a refused connection, at once
	for _, ep := range []string{"::::", "not a url", "http://"} {
		cmd := exec.Command(bin, "replay", "--spool-dir", "none", "--traces-endpoint", "http://"+addr,
			repo.Path("testdata/captures/pi-0.73.x/bash-tool.jsonl"))
		cmd.Env = []string{"HOME=" + t.TempDir(), "OTEL_EXPORTER_OTLP_ENDPOINT=" + ep}
		out, _ := cmd.CombinedOutput()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if !strings.HasPrefix(line, "pi-otel") {
				t.Errorf("%q: unprefixed line %q in:\n%s", ep, line, out)
			}
		}
	}
}

// --follow and --poll have their variables, and the flag wins over them.
func TestFollowVariables(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "never.jsonl")
	var stdout, stderr bytes.Buffer
	env := map[string]string{"PI_OTEL_FOLLOW": "true", "PI_OTEL_FOLLOW_POLL": "soon"}
	ctxDone := make(chan int, 1)
	go func() {
		ctxDone <- app.Main(t.Context(), app.Env{Args: []string{"replay", "--follow=false", missing},
			Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
			Getenv: func(k string) string { return env[k] }})
	}()
	// The flag turned following off: a missing file is an error at once.
	if code := <-ctxDone; code != 1 {
		t.Fatalf("exit %d, want 1 (not following)\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `ignoring PI_OTEL_FOLLOW_POLL "soon"`) {
		t.Errorf("no warning for the bad variable:\n%s", stderr.String())
	}
}
