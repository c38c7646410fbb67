package outfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

func TestCreatesPrivateFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "traces.jsonl")
	w, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	// Appends, and keeps an existing file's mode.
	os.Chmod(p, 0o640)
	w, _ = Open(p)
	w.Write([]byte("two\n"))
	w.Close()
	if b, _ := os.ReadFile(p); string(b) != "one\ntwo\n" {
		t.Errorf("content %q", b)
	}
}

func TestSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, nil, 0o600)

	own := filepath.Join(dir, "own")
	if err := os.Symlink(target, own); err != nil {
		t.Fatal(err)
	}
	w, err := Open(own)
	if err != nil {
		t.Fatalf("own symlink refused: %v", err)
	}
	w.Write([]byte("x"))
	w.Close()
	if b, _ := os.ReadFile(target); string(b) != "x" {
		t.Errorf("own symlink not followed: %q", b)
	}

	planted := filepath.Join(dir, "planted")
	os.Symlink(target, planted)
	if err := os.Lchown(planted, 4242, 4242); err != nil {
		if os.Getuid() == 0 {
			t.Fatalf("root could not chown: %v", err) // the test must not go quiet where it can run
		}
		t.Skipf("cannot give the symlink to another user here (%v): run as root to test refusal", err)
	}
	if _, err := Open(planted); err == nil || !strings.Contains(err.Error(), "symlink owned by uid 4242") {
		t.Errorf("planted symlink: %v", err)
	}
}

// A FIFO nobody reads: Open returns at once, a write gives up at its
// deadline, and once a reader comes the next write goes through.
func TestFIFOWithoutReader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := w.Write([]byte("lost\n")); !errors.Is(err, ErrStalled) {
		t.Fatalf("write with no reader: %v", err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.SetDeadline(time.Time{})
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := io.ReadAtLeast(r, b, len("kept\n"))
		got <- string(b[:n])
	}()
	if _, err := w.Write([]byte("kept\n")); err != nil {
		t.Fatal(err)
	}
	// The write given up on was never handed over: its caller was told.
	if s := <-got; s != "kept\n" {
		t.Errorf("reader got %q", s)
	}
}

// A reader that stops reading: a write blocked on the full pipe returns at
// the deadline, even one set after the write began, and so does the next.
func TestStalledReader(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	w := Wrap(pw)
	defer w.Close()
	big := bytes.Repeat([]byte("x"), 1<<20) // far more than a pipe holds
	errc := make(chan error, 1)
	go func() { _, err := w.Write(big); errc <- err }()
	// The write has begun once the pipe holds some of it; the rest waits.
	wait.For(t, time.Minute, func() bool { return unread(t, pr) > 0 },
		func() string { return "the write never reached the pipe" })
	w.SetDeadline(time.Now())
	if err := <-errc; !errors.Is(err, ErrStalled) {
		t.Fatalf("blocked write: %v", err)
	}
	if _, err := w.Write([]byte("next")); !errors.Is(err, ErrStalled) {
		t.Fatalf("write behind a stuck one: %v", err)
	}
}

func TestConcurrentWritesKeepLines(t *testing.T) {
	var buf bytes.Buffer
	w := Wrap(&buf)
	defer w.Close()
	done := make(chan struct{})
	for i := 0; i < 8; i++ {
		go func() {
			for j := 0; j < 100; j++ {
				w.Write([]byte("line\n"))
			}
			done <- struct{}{}
		}()
	}
	for i := 0; i < 8; i++ {
		<-done
	}
	if buf.String() != strings.Repeat("line\n", 800) {
		t.Errorf("lines interleaved or lost: %d bytes", buf.Len())
	}
}

// shortFile writes only the first max bytes of a write to the real file,
// then fails, as a full disk does mid-line.
type shortFile struct {
	*os.File
	max int
}

func (s shortFile) Write(p []byte) (int, error) {
	if len(p) <= s.max {
		return s.File.Write(p)
	}
	n, _ := s.File.Write(p[:s.max])
	return n, syscall.ENOSPC
}

// A write cut short leaves no part of itself: the file keeps whole lines.
func TestShortWriteIsUndone(t *testing.T) {
	p := filepath.Join(t.TempDir(), "traces.jsonl")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := wholeWrites{shortFile{f, 10}}
	if n, err := w.Write([]byte("first\n")); n != 6 || err != nil {
		t.Fatalf("whole write: %d, %v", n, err)
	}
	n, err := w.Write([]byte(`{"a half-written line":1}` + "\n"))
	if n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("short write returned %d, %v; want 0 and the disk's error", n, err)
	}
	if _, err := w.Write([]byte("third\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "first\nthird\n" {
		t.Errorf("file holds %q, want whole lines only", got)
	}
}

// On a real device that is always full the write fails whole and says so.
func TestDevFull(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	w, err := Open("/dev/full")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("line\n")); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("write to /dev/full: %v, want ENOSPC", err)
	}
}

// openTorn opens p with OnTornLine, counting its calls.
func openTorn(t *testing.T, p string) (*Writer, *atomic.Int32) {
	t.Helper()
	var torn atomic.Int32
	w, err := Open(p, OnTornLine(func() { torn.Add(1) }))
	if err != nil {
		t.Fatal(err)
	}
	return w, &torn
}

// A file whose last line was cut short (its writer killed mid-line): the
// next Writer ends that line first, so its own lines stay whole and on
// their own, and says so once.
func TestTornLastLineIsEnded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(p, []byte("{\"whole\":1}\n{\"cut\":"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, torn := openTorn(t, p)
	for range 2 {
		if _, err := w.Write([]byte("{\"new\":2}\n")); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if got, _ := os.ReadFile(p); string(got) != "{\"whole\":1}\n{\"cut\":\n{\"new\":2}\n{\"new\":2}\n" {
		t.Errorf("file holds %q", got)
	}
	if n := torn.Load(); n != 1 {
		t.Errorf("told of the torn line %d times, want once", n)
	}
	// The next Writer finds whole lines and adds nothing of its own.
	w, torn = openTorn(t, p)
	w.Write([]byte("{\"next\":3}\n"))
	w.Close()
	if got, _ := os.ReadFile(p); !strings.HasSuffix(string(got), "{\"new\":2}\n{\"next\":3}\n") || torn.Load() != 0 {
		t.Errorf("a whole file was changed (told %d times): %q", torn.Load(), got)
	}
}

// Two processes opening the same torn file at once (or traces and logs
// in one file) take turns: the line is ended once, not twice, so no blank
// line follows it. Here the other process holds its turn while the Writer
// opens, and ends the line.
func TestTornLineEndedOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "all.jsonl")
	os.WriteFile(p, []byte("{\"cut\":"), 0o600)
	other, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX); err != nil {
		t.Skipf("no flock here: %v", err)
	}
	w, torn := openTorn(t, p)
	defer w.Close()
	// The Writer waits for its turn: were it not, it could end the line
	// before the other does, and the file would hold a blank line.
	wait.For(t, time.Minute, func() bool { return lockWaited(t, p) },
		func() string { return "the Writer did not wait for the other's lock" })
	other.Write([]byte("\n"))
	syscall.Flock(int(other.Fd()), syscall.LOCK_UN)
	if _, err := w.Write([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "{\"cut\":\n{}\n" || torn.Load() != 0 {
		t.Errorf("file holds %q (told %d times), want the line ended once, by the other", got, torn.Load())
	}
}

// A last line another process is still writing is not torn: once it
// grows while watched, it is left for its writer to end.
func TestLineBeingWrittenIsLeftAlone(t *testing.T) {
	p := filepath.Join(t.TempDir(), "traces.jsonl")
	os.WriteFile(p, []byte("{\"being\":"), 0o600)
	other, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	saved := pause
	t.Cleanup(func() { pause = saved })
	var once sync.Once
	pause = func() { once.Do(func() { other.Write([]byte("\"written\"}\n")) }) }
	w, torn := openTorn(t, p)
	w.Write([]byte("{}\n"))
	w.Close()
	if got, _ := os.ReadFile(p); string(got) != "{\"being\":\"written\"}\n{}\n" || torn.Load() != 0 {
		t.Errorf("file holds %q (told %d times)", got, torn.Load())
	}
}

// killChild is set in the process TestKilledWhileWriting starts: it
// writes long lines to the file named until it is killed.
const killChild = "OUTFILE_TEST_WRITE_UNTIL_KILLED"

// A writer killed with SIGKILL in the middle of a long line leaves it
// torn (the kernel stops a write at a fatal signal); the next Writer's
// lines are still whole, each on its own line.
func TestKilledWhileWriting(t *testing.T) {
	line := append(bytes.Repeat([]byte("x"), 4<<20), '\n')
	if p := os.Getenv(killChild); p != "" {
		w, err := Open(p)
		if err != nil {
			os.Exit(3)
		}
		for {
			w.Write(line)
		}
	}
	if testing.Short() {
		t.Skip("starts processes and writes tens of MB")
	}
	p := filepath.Join(t.TempDir(), "traces.jsonl")
	torn := false
	for try := 0; try < 10 && !torn; try++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledWhileWriting$")
		cmd.Env = append(os.Environ(), killChild+"="+p)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		start := fileSize(p)
		wait.For(t, time.Minute, func() bool { return fileSize(p) >= start+int64(2*len(line)) },
			func() string { return "the child wrote nothing" })
		cmd.Process.Kill()
		cmd.Wait()
		b, _ := os.ReadFile(p)
		torn = len(b) > 0 && b[len(b)-1] != '\n'
	}
	if !torn {
		t.Skip("no kill landed in the middle of a line in 10 tries")
	}
	w, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("{}\n"))
	w.Close()
	b, _ := os.ReadFile(p)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if lines[len(lines)-1] != "{}" {
		t.Fatalf("the new line is glued to the torn one: ends %q", b[max(0, len(b)-20):])
	}
	short := 0
	for _, l := range lines[:len(lines)-1] {
		if len(l) != len(line)-1 {
			short++
		}
	}
	if short != 1 {
		t.Errorf("%d lines cut short, want the one torn by the kill", short)
	}
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// unread is how many bytes the pipe r reads from holds.
func unread(t *testing.T, r *os.File) int {
	t.Helper()
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var ierr error
	if err := rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), fionread) }); err != nil || ierr != nil {
		t.Fatalf("FIONREAD: %v %v", err, ierr)
	}
	return n
}

// lockWaited reports whether /proc/locks lists a process blocked on a
// lock of the file at p: such a waiter is marked "->".
func lockWaited(t *testing.T, p string) bool {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		if runtime.GOOS == "linux" {
			t.Fatalf("Linux lists its locks in /proc/locks: %v", err) // CI must not skip
		}
		t.Skipf("cannot see who waits for a lock here: %v", err)
	}
	ino := fmt.Sprintf(":%d", fi.Sys().(*syscall.Stat_t).Ino)
	for l := range strings.Lines(string(locks)) {
		f := strings.Fields(l)
		if len(f) > 6 && f[1] == "->" && strings.HasSuffix(f[6], ino) {
			return true
		}
	}
	return false
}
