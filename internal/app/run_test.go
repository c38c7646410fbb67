package app_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// `pi-otel run` with deterministic children instead of Pi: what a user
// relies on when they put pi-otel in front of a command.

var captures = repo.Path("testdata/captures/pi-1.6.0") + "/"

// mainRun calls app.Main in this process with no settings from the
// environment. It returns the exit code, what pi-otel wrote to its stdout
// and its own stderr; the child's stderr is this process's.
func mainRun(t *testing.T, args ...string) (int, []byte, []byte) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := app.Main(t.Context(), app.Env{
		Args:   args,
		Stdin:  strings.NewReader(""),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(string) string { return "" },
	})
	return code, stdout.Bytes(), stderr.Bytes()
}

// TestRunPassesStdoutThrough: garbage, CR, CRLF, raw U+2028/U+2029, bytes
// that are not UTF-8, unterminated JSON and a last line without LF, mixed
// into a real Pi stream, come out byte for byte; the records among them
// are still traced.
func TestRunPassesStdoutThrough(t *testing.T) {
	dir := t.TempDir()
	noise := [][]byte{
		{0x00, 0x01, 0xff, 0xfe, 0x80, 0xc0},
		[]byte("a CRLF line\r"),
		[]byte("\r"),
		[]byte(`{"type":"noise","text":"raw ` + "\u2028 and \u2029" + ` in a string"}`),
		[]byte("bare \u2028 separator \u2029 outside JSON"),
		[]byte(`{"unterminated": [1, 2`),
		[]byte("   "),
		{},
	}
	var in bytes.Buffer
	for i, line := range bytes.SplitAfter(readFile(t, captures+"text.jsonl"), []byte("\n")) {
		in.Write(line)
		if len(line) > 0 {
			in.Write(noise[i%len(noise)])
			in.WriteByte('\n')
		}
	}
	in.WriteString("the end, with no final LF")
	src := filepath.Join(dir, "stream")
	writeFile(t, src, in.Bytes())
	traces := filepath.Join(dir, "traces.jsonl")

	code, stdout, stderr := mainRun(t, "run", "--traces-exporter", "file", "--traces-file", traces, "--", "cat", src)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	proc.SameBytes(t, "stdout", stdout, in.Bytes())
	tr := readTraces(t, traces)
	if len(tr) != 1 {
		t.Fatalf("%d traces, want 1", len(tr))
	}
	wantTree(t, tr, "text") // the tree names end_reason settled
	if !bytes.Contains(stderr, []byte("not traced")) {
		t.Errorf("no warning about the records that are not Pi's:\n%s", stderr)
	}
}

// TestRunPassesA64MBLineThrough: a 64 MB record (a text delta) comes out
// whole and the trace around it is complete.
func TestRunPassesA64MBLineThrough(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var in bytes.Buffer
	grown := false
	delta := regexp.MustCompile(`"delta":"[^"]*"`)
	for _, line := range bytes.SplitAfter(readFile(t, captures+"text.jsonl"), []byte("\n")) {
		if !grown && bytes.Contains(line, []byte(`"type":"text_delta"`)) {
			line = delta.ReplaceAllLiteral(line, []byte(`"delta":"`+strings.Repeat("x", 64<<20)+`"`))
			grown = true
		}
		in.Write(line)
	}
	if !grown {
		t.Fatal("no text_delta in the capture")
	}
	src := filepath.Join(dir, "stream")
	writeFile(t, src, in.Bytes())
	traces := filepath.Join(dir, "traces.jsonl")
	code, stdout, stderr := mainRun(t, "run", "--traces-file", traces, "--", "cat", src)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	proc.SameBytes(t, "stdout", stdout, in.Bytes())
	tr := readTraces(t, traces)
	if len(tr) != 1 || len(spantree.All(tr)) != 4 {
		t.Fatalf("traces %v", tr)
	}
	tr[0].WantAttrs(t, map[string]string{"pi.outcome": "ok"})
}

// TestRunExitCodes: pi-otel exits as its child did, 128+N for a child
// killed by signal N, and 127 with a message for a command that is not
// there. Each run still ends with its summary line.
func TestRunExitCodes(t *testing.T) {
	for _, tc := range []struct {
		script string
		code   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{"kill -KILL $$", 128 + int(syscall.SIGKILL)},
	} {
		t.Run(tc.script, func(t *testing.T) {
			code, stdout, stderr := mainRun(t, "run", "--traces-exporter", "none", "--", "sh", "-c", tc.script)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			if len(stdout) != 0 {
				t.Errorf("stdout %q", stdout)
			}
			if !bytes.HasPrefix(stderr, []byte("pi-otel: 0 traces, 0 spans")) {
				t.Errorf("stderr %q", stderr)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "no-such-pi")
		code, stdout, stderr := mainRun(t, "run", "--traces-exporter", "none", "--", missing, "--mode", "json")
		if code != 127 {
			t.Errorf("exit %d, want 127", code)
		}
		if len(stdout) != 0 {
			t.Errorf("stdout %q", stdout)
		}
		first, _, _ := strings.Cut(string(stderr), "\n")
		if !strings.Contains(first, missing) || !strings.Contains(first, "no such file or directory") {
			t.Errorf("message %q does not say what is missing", first)
		}
	})
	t.Run("not in PATH", func(t *testing.T) {
		code, _, stderr := mainRun(t, "run", "--traces-exporter", "none", "--", "no-such-pi-otel-child")
		if code != 127 || !strings.Contains(string(stderr), `"no-such-pi-otel-child": executable file not found in $PATH`) {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
}

// The tests below run the built binary: they need its real stdin, stderr,
// process and pipes.

// childEnv selects what the test binary does when it runs as a child (see
// TestRunChild).
const childEnv = "PI_OTEL_RUN_TEST_CHILD"

// TestRunChild is not a test: run with childEnv set, it is the child the
// binary tests start.
//
//	trap:  prints "ready", then reports the first SIGINT or SIGTERM and exits 7.
//	flood: writes the file named by PI_OTEL_RUN_TEST_FILE, then repeats its
//	       last line until writing fails.
func TestRunChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "":
		return
	case "trap":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGINT, syscall.SIGTERM)
		fmt.Println("ready")
		fmt.Printf("trapped %v\n", <-c)
		os.Exit(7)
	case "flood":
		b, err := os.ReadFile(os.Getenv("PI_OTEL_RUN_TEST_FILE"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		lines := bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
		last := append(lines[len(lines)-1], '\n')
		os.Stdout.Write(b)
		for {
			// A write to a broken stdout kills a Go program with SIGPIPE,
			// as it does most programs.
			if _, err := os.Stdout.Write(last); err != nil {
				fmt.Fprintln(os.Stderr, "flood:", err)
				os.Exit(3)
			}
		}
	}
	fmt.Fprintln(os.Stderr, "unknown child mode", os.Getenv(childEnv))
	os.Exit(2)
}

// childArgv runs this test binary as the child in mode.
func childArgv() []string { return []string{os.Args[0], "-test.run=^TestRunChild$"} }

func TestRunBinary(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)

	// Stdout and stderr are the child's, byte for byte: with --quiet,
	// pi-otel adds nothing, not even a warning about the garbage.
	t.Run("stdout and stderr", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		out := append(readFile(t, captures+"bash-tool.jsonl"), "\x00\xff\r\n\u2028{\"x\":\r\nno final LF"...)
		errb := []byte("\xfe\xfflog line\r\n\u2029 and no final LF")
		writeFile(t, filepath.Join(dir, "out"), out)
		writeFile(t, filepath.Join(dir, "err"), errb)
		r := runBin(t, bin, binRun{
			args: []string{"run", "--quiet", "--traces-file", filepath.Join(dir, "traces.jsonl"), "--",
				"sh", "-c", `cat "$1"; cat "$2" >&2`, "sh", filepath.Join(dir, "out"), filepath.Join(dir, "err")},
		})
		if r.code != 0 {
			t.Fatalf("exit %d", r.code)
		}
		proc.SameBytes(t, "stdout", r.stdout, out)
		proc.SameBytes(t, "stderr", r.stderr, errb)
		tr := readTraces(t, filepath.Join(dir, "traces.jsonl"))
		if len(tr) != 1 {
			t.Fatalf("%d traces", len(tr))
		}
		wantTree(t, tr, "bash-tool")
	})

	// `cat log | pi-otel run -- cat`: the child reads pi-otel's stdin, and
	// what it echoes is traced.
	t.Run("stdin", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		log := readFile(t, captures+"bash-tool.jsonl")
		traces := filepath.Join(dir, "traces.jsonl")
		r := runBin(t, bin, binRun{
			args:  []string{"run", "--traces-file", traces, "--", "cat"},
			stdin: bytes.NewReader(log),
		})
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		proc.SameBytes(t, "stdout", r.stdout, log)
		tr := readTraces(t, traces)
		if len(tr) != 1 {
			t.Fatalf("%d traces", len(tr))
		}
		wantTree(t, tr, "bash-tool")
		if !strings.Contains(string(r.stderr), "pi-otel: 1 trace ("+tr[0].TraceID+"), 7 spans → file "+traces) {
			t.Errorf("summary:\n%s", r.stderr)
		}
	})

	// The child gets pi-otel's stdin itself, not a copy: here a file.
	t.Run("stdin is inherited", func(t *testing.T) {
		t.Parallel()
		f := filepath.Join(t.TempDir(), "input")
		writeFile(t, f, []byte("x"))
		in, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		r := runBin(t, bin, binRun{args: []string{"run", "--traces-exporter", "none", "--", "readlink", "/proc/self/fd/0"}, stdin: in})
		if got := strings.TrimSpace(string(r.stdout)); got != f {
			t.Errorf("the child's stdin is %q, want %q", got, f)
		}
	})

	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run("forwards "+sig.String(), func(t *testing.T) {
			t.Parallel()
			r := runBin(t, bin, binRun{
				args: append([]string{"run", "--traces-exporter", "none", "--"}, childArgv()...),
				env:  []string{childEnv + "=trap"},
				onLine: func(line []byte, p *os.Process) {
					if string(line) == "ready\n" {
						if err := p.Signal(sig); err != nil {
							t.Error(err)
						}
					}
				},
			})
			if want := "ready\ntrapped " + sig.String() + "\n"; string(r.stdout) != want {
				t.Errorf("child wrote %q, want %q\nstderr:\n%s", r.stdout, want, r.stderr)
			}
			if r.code != 7 {
				t.Errorf("exit %d, want the child's 7", r.code)
			}
		})
	}

	// `pi-otel run -- … | head -1`: the consumer leaves early. The child
	// meets the broken pipe as it would without pi-otel, pi-otel exits as
	// the child did, and the trace is closed and written.
	t.Run("consumer closes early", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		// A run that is open when the pipe breaks: its records up to the
		// first assistant text, then that text forever.
		var head []byte
		for _, line := range bytes.SplitAfter(readFile(t, captures+"text.jsonl"), []byte("\n")) {
			head = append(head, line...)
			if bytes.Contains(line, []byte(`"type":"text_delta"`)) {
				break
			}
		}
		stream := filepath.Join(dir, "stream")
		writeFile(t, stream, head)
		env := []string{childEnv + "=flood", "PI_OTEL_RUN_TEST_FILE=" + stream}
		child := strings.Join(quoteAll(childArgv()), " ")
		direct := runBin(t, "bash", binRun{args: []string{"-c", "set -o pipefail; " + child + " | head -1"}, env: env})
		traces := filepath.Join(dir, "traces.jsonl")
		through := runBin(t, "bash", binRun{
			args: []string{"-c", "set -o pipefail; " + bin + " run --traces-file " + traces + " -- " + child + " | head -1"},
			env:  env,
		})
		firstLine, _, _ := bytes.Cut(head, []byte("\n"))
		for _, r := range []*binResult{direct, through} {
			proc.SameBytes(t, "head's output", r.stdout, append(firstLine, '\n'))
		}
		if through.code != direct.code {
			t.Errorf("through pi-otel the pipeline exits %d, directly %d\nstderr:\n%s", through.code, direct.code, through.stderr)
		}
		if strings.Contains(string(through.stderr), "panic") {
			t.Errorf("stderr:\n%s", through.stderr)
		}
		tr := readTraces(t, traces)
		if len(tr) != 1 {
			t.Fatalf("%d traces\nstderr:\n%s", len(tr), through.stderr)
		}
		root := tr[0]
		root.WantAttrs(t, map[string]string{"pi.settled": "false", "pi.exit_code": fmt.Sprint(direct.code)})
		if direct.code == 128+int(syscall.SIGPIPE) {
			root.WantAttrs(t, map[string]string{"pi.end_reason": "signal", "pi.signal": "SIGPIPE"})
		}
		if !root.Failed() {
			t.Errorf("root status %v", root.Status)
		}
		for _, s := range spantree.All(tr)[1:] {
			if s.Str("pi.unfinished") != "true" {
				t.Errorf("%s not closed as unfinished", s.Name)
			}
		}
	})
}

// binRun is one run of a built program.
type binRun struct {
	args    []string
	env     []string // added to this process's, minus OTEL_* and PI_OTEL_*
	stdin   io.Reader
	started func(p *os.Process)              // called once it runs
	onLine  func(line []byte, p *os.Process) // sees each stdout line as it comes
	// onStderr sees each stderr line as it comes.
	onStderr func(line []byte, p *os.Process)
}

// stderrLines keeps what a process writes and hands each whole line to
// line as it comes; exec's one copying goroutine writes to it.
type stderrLines struct {
	all  *bytes.Buffer
	part []byte
	line func([]byte)
}

func (w *stderrLines) Write(p []byte) (int, error) {
	w.all.Write(p)
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(w.part[:i+1])
		w.part = w.part[i+1:]
	}
}

type binResult struct {
	stdout, stderr []byte
	code           int // as a shell reports it: 128+N for death by signal N
}

func runBin(t *testing.T, name string, r binRun) *binResult {
	t.Helper()
	// A guard against a hang, not a performance assertion.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, r.args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "PI_OTEL_") && !strings.HasPrefix(kv, "TRACEPARENT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, r.env...)
	cmd.Stdin = r.stdin
	// Its own process group: signals the test sends reach pi-otel only.
	cmd.SysProcAttr = proc.Group()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if r.onStderr != nil {
		// Set by Start before it starts the goroutine that writes.
		cmd.Stderr = &stderrLines{all: &stderr, line: func(l []byte) { r.onStderr(l, cmd.Process) }}
	}
	stdout, err := proc.Run(cmd, r.started, r.onLine)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %v did not finish\nstderr:\n%s", name, r.args, stderr.Bytes())
	}
	res := &binResult{stdout: stdout, stderr: stderr.Bytes()}
	var sig syscall.Signal
	res.code, sig = proc.ExitCode(cmd.ProcessState)
	if sig != 0 && name != "bash" {
		t.Errorf("%s died of %v\nstderr:\n%s", name, sig, stderr.Bytes())
	}
	return res
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return out
}

// readTraces parses an OTLP/JSON lines file into span trees, one a
// trace, in the order their roots start.
func readTraces(t *testing.T, path string) []*spantree.Node {
	t.Helper()
	forest := spantree.ReadOTLPFile(t, path)
	ids := map[string]bool{}
	for _, r := range forest {
		if ids[r.TraceID] {
			t.Fatalf("trace %s has more than one root:\n%s", r.TraceID, spantree.Shape(forest))
		}
		ids[r.TraceID] = true
	}
	return forest
}

// wantTree compares the traces with the golden tree of a Pi 1.6.0 capture.
func wantTree(t *testing.T, forest []*spantree.Node, capture string) {
	t.Helper()
	spantree.Want(t, spantree.CaptureTree("pi-1.6.0", capture), forest)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
