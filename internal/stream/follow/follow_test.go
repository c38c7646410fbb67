package follow

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// lines reads lines from r into a channel until EOF.
func lines(r *Reader) <-chan string {
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		s := bufio.NewScanner(r)
		for s.Scan() {
			ch <- s.Text()
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatal("reader ended early")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10s")
	}
	return ""
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

func TestFollowGrowthRotationTruncationAndStop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pi.jsonl")
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Open(ctx, path, WithPoll(5*time.Millisecond)) // not there yet
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ch := lines(r)

	appendLine(t, path, "one")
	if got := next(t, ch); got != "one" {
		t.Fatalf("got %q", got)
	}
	appendLine(t, path, "two")
	if got := next(t, ch); got != "two" {
		t.Fatalf("got %q", got)
	}
	// Rotation: the old file moves away, a new one takes its name.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendLine(t, path, "three")
	if got := next(t, ch); got != "three" {
		t.Fatalf("after rotation got %q", got)
	}
	// Truncation in place.
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	appendLine(t, path, "4")
	if got := next(t, ch); got != "4" {
		t.Fatalf("after truncation got %q", got)
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("unexpected line after stop")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reader did not stop when its context ended")
	}
}

// A file truncated while its last line is half written: the half line
// ends where the content went, so the first new record stays whole. The
// Reader's polls run on the bubble's clock: once every goroutine waits,
// the Reader is past the half line and waiting for more.
func TestTruncationEndsThePartialLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "pi.jsonl")
		if err := os.WriteFile(path, []byte("{\"type\":\"a\"}\n{\"type\":\"hal"), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		r, err := Open(ctx, path, WithPoll(5*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		ch := lines(r)
		if l := next(t, ch); l != `{"type":"a"}` {
			t.Fatalf("first line %q", l)
		}
		synctest.Wait() // the partial line has been read
		if err := os.WriteFile(path, []byte("{\"type\":\"b\"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if l := next(t, ch); l != `{"type":"hal` {
			t.Errorf("the partial line came out as %q", l)
		}
		if l := next(t, ch); l != `{"type":"b"}` {
			t.Errorf("the first new record came out as %q", l)
		}
	})
}

// Opening a FIFO waits for a writer; a cancelled context ends the wait.
func TestOpenFIFOIsInterruptible(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := OpenFile(ctx, path); err != context.Canceled {
		t.Fatalf("OpenFile: %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel2)
	if _, err := Open(ctx2, path); err != context.Canceled {
		t.Fatalf("Open: %v", err)
	}
}
