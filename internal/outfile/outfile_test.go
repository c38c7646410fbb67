package outfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	time.Sleep(50 * time.Millisecond) // let the write block
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
