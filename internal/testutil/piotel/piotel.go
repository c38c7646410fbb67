// Package piotel runs the pi-otel binary the way the collector and
// operator suites feed their stacks: it finds or builds the binary, gives a
// process an environment that exports only where the test says, and runs
// `pi-otel replay` over the captures, reading its exit summary.
package piotel

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
)

// EnvBin names a prebuilt pi-otel for the suites to run instead of
// building one (to check a release build).
const EnvBin = "PI_OTEL_BIN"

// Binary returns $PI_OTEL_BIN or a pi-otel built from this module once
// per process (proc.Shared: the package's TestMain removes it).
func Binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(EnvBin); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s=%s: %v", EnvBin, bin, err)
		}
		return bin
	}
	return proc.Shared(t, "./cmd/pi-otel")
}

// ExportEnv is the environment of one pi-otel process: base minus anything that would change
// pi-otel's settings (OTEL_*, PI_OTEL_*, a caller's trace context), plus OTLP to endpoint over
// protocol ("grpc" or "http/protobuf") and no spool.
func ExportEnv(base []string, endpoint, protocol string) []string {
	out := base[:0:0]
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || strings.HasPrefix(k, "PI_OTEL_") || k == "TRACEPARENT" || k == "TRACESTATE" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL="+protocol, "PI_OTEL_SPOOL_DIR=none")
}

// Replayed is what one `pi-otel replay` process reported on exit.
type Replayed struct {
	File string
	summaryline.Summary
	Failed  int    // spans pi-otel reported as not delivered ("failed to export", "dropped")
	Trouble string // the summary line, when it reports any export trouble
	Stderr  []byte
}

var failedRE = regexp.MustCompile(`(\d+) (?:failed to export|spans? dropped)`)

// replayGuard bounds one replay so a hang fails instead of timing the package out.
const replayGuard = 2 * time.Minute

// Replay runs `pi-otel replay --traces-exporter otlp --metrics-exporter otlp FILE` exporting to
// endpoint over protocol ("grpc" or "http/protobuf"), with env added to ExportEnv's, and parses its
// exit summary. It returns an error instead of failing, so replays can run on many goroutines.
// Export trouble is not an error: it is in Trouble and Failed, for the caller to judge.
func Replay(bin, file, endpoint, protocol string, env ...string) (Replayed, error) {
	ctx, cancel := context.WithTimeout(context.Background(), replayGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "replay", "--traces-exporter", "otlp", "--metrics-exporter", "otlp", file)
	cmd.Env = append(ExportEnv(os.Environ(), endpoint, protocol), env...)
	cmd.SysProcAttr = proc.Group()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	r := Replayed{File: file, Stderr: stderr.Bytes()}
	if ctx.Err() != nil {
		return r, fmt.Errorf("replay %s: still running after %v:\n%s", file, replayGuard, stderr.Bytes())
	}
	if err != nil {
		return r, fmt.Errorf("replay %s: %v:\n%s", file, err, stderr.Bytes())
	}
	var ok bool
	if r.Summary, ok = summaryline.Parse(stderr.Bytes()); !ok {
		return r, fmt.Errorf("replay %s: no summary line:\n%s", file, stderr.Bytes())
	}
	if r.Summary.Trouble() {
		r.Trouble = r.Line
		for _, f := range failedRE.FindAllStringSubmatch(r.Dest, -1) {
			n, _ := strconv.Atoi(f[1])
			r.Failed += n
		}
	}
	return r, nil
}

// JSONCaptures lists the real Pi 1.6.0 json-mode captures, the streams a replay reads (the rpc-*
// ones are RPC transcripts, not replayable streams). None fails t.
func JSONCaptures(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(repo.Path("testdata/captures/pi-1.6.0/*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		if !strings.HasPrefix(filepath.Base(p), "rpc-") {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("no captures in testdata/captures/pi-1.6.0")
	}
	return out
}
