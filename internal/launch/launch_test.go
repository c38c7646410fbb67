//go:build unix

package launch_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/launch"
)

// start runs argv and closes its stdout when the test ends.
func start(t *testing.T, argv []string, opts ...launch.Option) *launch.Process {
	t.Helper()
	p, err := launch.Start(argv, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Signal(syscall.SIGKILL)
		p.Stdout().Close()
	})
	return p
}

// wait is Wait with a guard against hanging.
func wait(t *testing.T, p *launch.Process) launch.Status {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(deadline):
		t.Fatalf("child %d did not exit", p.Pid())
	}
	st, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func readAll(t *testing.T, p *launch.Process) []byte {
	t.Helper()
	b, err := io.ReadAll(p.Stdout())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func helperArgv(mode string, args ...string) ([]string, launch.Option) {
	return append([]string{os.Args[0]}, args...), launch.WithEnv(helperEnv + "=" + mode)
}

func TestStdoutIsByteExact(t *testing.T) {
	const size, seed = 3<<20 + 7, 42
	argv, env := helperArgv("emit", strconv.Itoa(size), strconv.Itoa(seed))
	p := start(t, argv, env)
	got := readAll(t, p)
	if st := wait(t, p); st != (launch.Status{}) {
		t.Fatalf("status %v", st)
	}
	want := emitted(size, seed)
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("stdout differs: got %d bytes, want %d, first difference at %d", len(got), len(want), i)
	}
}

func TestExitStatus(t *testing.T) {
	cases := []struct {
		name   string
		argv   []string
		signal syscall.Signal // sent after start, if non-zero
		want   launch.Status
	}{
		{"exit 0", []string{"sh", "-c", "exit 0"}, 0, launch.Status{Code: 0}},
		{"exit 3", []string{"sh", "-c", "exit 3"}, 0, launch.Status{Code: 3}},
		{"exit 130 by hand", []string{"sh", "-c", "exit 130"}, 0, launch.Status{Code: 130}},
		{"SIGINT", []string{"sleep", "1000"}, syscall.SIGINT, launch.Status{Code: 130, Signal: syscall.SIGINT}},
		{"SIGTERM", []string{"sleep", "1000"}, syscall.SIGTERM, launch.Status{Code: 143, Signal: syscall.SIGTERM}},
		{"SIGKILL", []string{"sleep", "1000"}, syscall.SIGKILL, launch.Status{Code: 137, Signal: syscall.SIGKILL}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, c.argv)
			if c.signal != 0 {
				if err := p.Signal(c.signal); err != nil {
					t.Fatal(err)
				}
			}
			if st := wait(t, p); st != c.want {
				t.Fatalf("got %v, want %v", st, c.want)
			}
		})
	}
}

func TestStatusString(t *testing.T) {
	for st, want := range map[launch.Status]string{
		{Code: 3}:                            "exit code 3",
		{Code: 143, Signal: syscall.SIGTERM}: "killed by signal 15 (terminated), exit code 143",
	} {
		if got := st.String(); got != want {
			t.Errorf("%#v: got %q, want %q", st, got, want)
		}
	}
}

func TestWaitRepeatsAndIsConcurrent(t *testing.T) {
	p := start(t, []string{"sh", "-c", "exit 5"})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, err := p.Wait(); err != nil || st.Code != 5 {
				t.Errorf("Wait: %v, %v", st, err)
			}
		}()
	}
	wg.Wait()
	if st := wait(t, p); st.Code != 5 {
		t.Fatalf("again: %v", st)
	}
	if err := p.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("Signal after exit: %v", err)
	}
}

func TestEnv(t *testing.T) {
	t.Setenv("LAUNCH_TEST_INHERITED", "kept")
	t.Setenv("LAUNCH_TEST_OVERRIDDEN", "old")
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	p := start(t, []string{"env"}, launch.WithEnv("TRACEPARENT="+tp, "LAUNCH_TEST_OVERRIDDEN=new"))
	out := string(readAll(t, p))
	wait(t, p)
	lines := strings.Split(out, "\n")
	for _, want := range []string{"LAUNCH_TEST_INHERITED=kept", "LAUNCH_TEST_OVERRIDDEN=new", "TRACEPARENT=" + tp} {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("child env lacks %s", want)
		}
	}
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "LAUNCH_TEST_OVERRIDDEN=") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("LAUNCH_TEST_OVERRIDDEN appears %d times", n)
	}
}

func TestWithEnvCopiesItsArguments(t *testing.T) {
	kv := []string{"LAUNCH_TEST_COPY=before"}
	opt := launch.WithEnv(kv...)
	kv[0] = "LAUNCH_TEST_COPY=after"
	p := start(t, []string{"sh", "-c", `printf %s "$LAUNCH_TEST_COPY"`}, opt)
	if got := string(readAll(t, p)); got != "before" {
		t.Fatalf("got %q", got)
	}
	wait(t, p)
}

// The child reads pi-otel's stdin file itself, not a copy of it.
func TestStdinIsInherited(t *testing.T) {
	data := emitted(1<<20+3, 7)
	path := filepath.Join(t.TempDir(), "stdin.bin")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}

	// The helper runs cat through launch and copies its stdout out.
	cmd := exec.Command(os.Args[0], "cat")
	cmd.Env = append(os.Environ(), helperEnv+"=supervise")
	cmd.Stdin = open()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v\n%s", err, errOut.Bytes())
	}
	if !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("child read %d bytes of stdin, want the file's %d", out.Len(), len(data))
	}

	if runtime.GOOS == "linux" {
		h := startHelper(t, "supervise", []string{"readlink", "/proc/self/fd/0"}, helperOpts{stdin: open()})
		h.expect("out: " + path)
		if ws := h.finish(); ws.ExitStatus() != 0 {
			t.Fatalf("helper: %v %q", ws, h.seen)
		}
	}
}

func TestStdinPipe(t *testing.T) {
	if p := start(t, []string{"true"}); p.Stdin() != nil {
		t.Fatal("Stdin without WithStdinPipe is not nil")
	}

	data := emitted(2<<20+1, 9)
	p := start(t, []string{"cat"}, launch.WithStdinPipe())
	werr := make(chan error, 1)
	go func() {
		_, err := p.Stdin().Write(data)
		if cerr := p.Stdin().Close(); err == nil {
			err = cerr
		}
		werr <- err
	}()
	got := readAll(t, p)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if st := wait(t, p); st.Code != 0 {
		t.Fatalf("status %v", st)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("cat echoed %d bytes, want %d", len(got), len(data))
	}
}

// After the child exits, its stdin pipe is closed: a writer gets an error
// instead of blocking or writing into nothing.
func TestStdinPipeClosedAtExit(t *testing.T) {
	p := start(t, []string{"sh", "-c", "exit 0"}, launch.WithStdinPipe())
	wait(t, p)
	if _, err := p.Stdin().Write([]byte("late\n")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("write to the stdin of an exited child: %v, want os.ErrClosed", err)
	}
}

// A background process the child leaves behind keeps stdout open past the
// child's exit. Wait does not depend on it, and Close unblocks the reader.
func TestStdoutHeldOpenByGrandchild(t *testing.T) {
	p := start(t, []string{"sh", "-c", "sleep 1000 & echo $!"})
	var line []byte
	for !bytes.HasSuffix(line, []byte("\n")) {
		b := make([]byte, 64)
		n, err := p.Stdout().Read(b)
		if err != nil {
			t.Fatal(err)
		}
		line = append(line, b[:n]...)
	}
	grandchild, err := strconv.Atoi(strings.TrimSpace(string(line)))
	if err != nil {
		t.Fatalf("pid line %q", line)
	}
	defer syscall.Kill(grandchild, syscall.SIGKILL)

	if st := wait(t, p); st.Code != 0 {
		t.Fatalf("status %v", st)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := p.Stdout().Read(make([]byte, 64))
		readErr <- err
	}()
	// The read is blocked (the sleep holds the pipe) or about to be;
	// either way Close must end it.
	if err := p.Stdout().Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-readErr:
		if !errors.Is(err, os.ErrClosed) {
			t.Fatalf("read after Close: %v", err)
		}
	case <-time.After(deadline):
		t.Fatal("Close did not unblock the reader")
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	noExec := write("no-exec", "#!/bin/sh\n", 0o644)
	garbage := write("garbage", "\x00\x01\x02 not a program\n", 0o755)
	badInterp := write("bad-interp", "#!/nonexistent/interpreter\n", 0o755)

	cases := []struct {
		name string
		argv []string
		code int
	}{
		{"not in PATH", []string{"pi-otel-no-such-command-x7"}, 127},
		{"no such path", []string{filepath.Join(dir, "missing")}, 127},
		{"interpreter missing", []string{badInterp}, 127},
		{"not executable", []string{noExec}, 126},
		{"directory", []string{dir}, 126},
		{"not a program", []string{garbage}, 126},
		{"empty argv", nil, 127},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := launch.Start(c.argv)
			if err == nil {
				p.Signal(syscall.SIGKILL)
				t.Fatalf("started %q", c.argv)
			}
			var se *launch.StartError
			if !errors.As(err, &se) {
				t.Fatalf("error %T %v is not a *StartError", err, err)
			}
			if len(c.argv) > 0 && !strings.Contains(err.Error(), strconv.Quote(c.argv[0])) {
				t.Errorf("error %q does not name %q", err, c.argv[0])
			}
			if got := launch.ExitCodeForStartError(err); got != c.code {
				t.Errorf("exit code %d, want %d (error %v)", got, c.code, err)
			}
			if c.name == "interpreter missing" && !strings.Contains(err.Error(), "bad interpreter") {
				t.Errorf("error %q does not blame the interpreter", err)
			}
		})
	}
	if got := launch.ExitCodeForStartError(nil); got != 0 {
		t.Errorf("nil error: %d", got)
	}
}

// A failed start leaves no descriptors behind.
func TestStartErrorLeaksNoFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	argv := []string{filepath.Join(t.TempDir(), "missing")}
	launch.Start(argv, launch.WithStdinPipe()) // warm up lazily opened files
	before := count()
	for range 20 {
		if _, err := launch.Start(argv, launch.WithStdinPipe()); err == nil {
			t.Fatal("started a missing file")
		}
	}
	if after := count(); after != before {
		t.Fatalf("open descriptors went from %d to %d", before, after)
	}
}

// BenchmarkStartWait is the cost launch adds per child against os/exec.
func BenchmarkStartWait(b *testing.B) {
	b.Run("launch", func(b *testing.B) {
		for b.Loop() {
			p, err := launch.Start([]string{"true"})
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, p.Stdout())
			p.Stdout().Close()
			if st, err := p.Wait(); err != nil || st.Code != 0 {
				b.Fatal(st, err)
			}
		}
	})
	b.Run("os-exec", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("true")
			cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestSignalNames(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{
		syscall.SIGTERM: "SIGTERM", syscall.SIGUSR1: "SIGUSR1", syscall.SIGWINCH: "SIGWINCH", syscall.Signal(200): "signal 200",
	} {
		if got := launch.SignalName(sig); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", int(sig), got, want)
		}
	}
}

// TestInheritStdout: the child writes to pi-otel's own stdout, the very
// file (a terminal, for Pi's TUI), and there is no pipe to read.
func TestInheritStdout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stdout")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := os.Stdout
	os.Stdout = f // Start hands the child the os.Stdout of the moment
	p, err := launch.Start([]string{"sh", "-c", "echo hello; readlink /proc/self/fd/1 || echo no-proc"}, launch.WithInheritStdout())
	os.Stdout = old
	if err != nil {
		t.Fatal(err)
	}
	if p.Stdout() != nil {
		t.Error("Stdout() is not nil with WithInheritStdout")
	}
	if st, err := p.Wait(); err != nil || st.Code != 0 {
		t.Fatalf("wait: %v %v", st, err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), "hello\n") {
		t.Fatalf("child wrote %q to the inherited stdout", b)
	}
	if runtime.GOOS == "linux" && !strings.Contains(string(b), path) {
		t.Errorf("the child's fd 1 is %q, want the file itself", b)
	}
}
