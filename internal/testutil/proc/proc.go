// Package proc holds what the tests that run programs share: building a
// command of this module, running a process while its stdout is read line
// by line, the exit code a shell would report, comparing outputs byte for
// byte and a buffer that a process and a test may use at once.
package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/pi-otel/pi-otel/internal/outfile"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// Build builds the main package pkg of this module (such as
// "./cmd/pi-otel") into dir and returns the binary's path.
func Build(dir, pkg string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = repo.Root()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// shared holds the binaries Shared built in this process, by package.
var shared struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// Shared builds pkg once per test process and returns the binary's path:
// a package whose tests each ran `go build` linked the same binary a dozen
// times. The binaries live until RemoveShared, which the package's
// TestMain calls after m.Run.
func Shared(tb testing.TB, pkg string) string {
	tb.Helper()
	shared.Lock()
	defer shared.Unlock()
	if bin, ok := shared.bins[pkg]; ok {
		return bin
	}
	if shared.dir == "" {
		dir, err := os.MkdirTemp("", "pi-otel-bin-")
		if err != nil {
			tb.Fatal(err)
		}
		shared.dir, shared.bins = dir, map[string]string{}
	}
	dir := filepath.Join(shared.dir, strconv.Itoa(len(shared.bins)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	bin := MustBuild(tb, dir, pkg)
	shared.bins[pkg] = bin
	return bin
}

// RemoveShared removes what Shared built.
func RemoveShared() {
	shared.Lock()
	defer shared.Unlock()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
		shared.dir, shared.bins = "", nil
	}
}

// MustBuild is Build failing tb.
func MustBuild(tb testing.TB, dir, pkg string) string {
	tb.Helper()
	bin, err := Build(dir, pkg)
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Run starts cmd with its stdout piped, calls started (when set) once it
// runs and line (when set) with each stdout line as it arrives, waits for
// it and returns all it wrote. cmd's own Wait error is not returned: its
// ProcessState says how it ended (see ExitCode).
func Run(cmd *exec.Cmd, started func(*os.Process), line func([]byte, *os.Process)) ([]byte, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if started != nil {
		started(cmd.Process)
	}
	var stdout bytes.Buffer
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		l, err := r.ReadBytes('\n')
		stdout.Write(l)
		if line != nil && len(l) > 0 {
			line(l, cmd.Process)
		}
		if err != nil {
			break
		}
	}
	_ = cmd.Wait()
	return stdout.Bytes(), nil
}

// ExitCode is how a shell reports a finished process: its exit code, or
// 128+N when signal N killed it (and that signal).
func ExitCode(ps *os.ProcessState) (int, syscall.Signal) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), ws.Signal()
	}
	return ps.ExitCode(), 0
}

// SameBytes compares two outputs byte for byte and says where they part.
func SameBytes(tb testing.TB, what string, got, want []byte) {
	tb.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	cut := func(b []byte) []byte { return b[i:min(i+40, len(b))] }
	tb.Errorf("%s: %d bytes, want %d; they differ from byte %d: got %q, want %q", what, len(got), len(want), i, cut(got), cut(want))
}

// Buffer is a buffer that a writer (a process's stderr) and a reader
// (the test) may use at once.
type Buffer = outfile.Buffer

// EnvBinary is the path of the binary named by the environment variable
// env (scripts/deps.sh builds it and writes env.sh, which exports env). A
// missing binary fails tb: the suites that need one prove what users run,
// so they must not skip.
func EnvBinary(tb testing.TB, env string) string {
	tb.Helper()
	p := os.Getenv(env)
	if p == "" {
		tb.Fatalf("%s is not set; run `bash scripts/deps.sh` and `source \"${PI_OTEL_CACHE:-$HOME/.cache/pi-otel}/env.sh\"` (scripts/test.sh does both)", env)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s=%s: %v; run `bash scripts/deps.sh`", env, p, err)
	}
	return p
}

// Tool is the path of the program name on PATH. A missing tool fails tb:
// the suites that need one must not skip. hint says where to get it.
func Tool(tb testing.TB, name, hint string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		tb.Fatalf("%s is required (%s): %v", name, hint, err)
	}
	return p
}
