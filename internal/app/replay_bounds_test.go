package app

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/outfile"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// endlessInput is stdin that never ends and never has an LF, like
// /dev/zero; served counts what it gave.
type endlessInput struct {
	block  []byte
	served atomic.Int64
}

func newEndlessInput(c byte) *endlessInput {
	return &endlessInput{block: bytes.Repeat([]byte{c}, 64<<10)}
}

func (e *endlessInput) Read(p []byte) (int, error) {
	n := copy(p, e.block)
	e.served.Add(int64(n))
	return n, nil
}

// heapPeak samples HeapInuse until stop is closed, then reports the
// largest value seen.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// replayUntil runs replay with args on stdin in, cancels its context once
// ready says so (polled), and returns the exit code, stderr, how long
// replay took to return after the cancel, and the peak HeapInuse above
// what was in use before.
func replayUntil(t *testing.T, in io.Reader, ready func() bool, args ...string) (code int, stderr string, after time.Duration, heap uint64) {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stop := make(chan struct{})
	peak := heapPeak(stop)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb outfile.Buffer
	done := make(chan int, 1)
	go func() {
		done <- replayCommand(ctx, Env{Stdin: in, Stdout: io.Discard, Stderr: &errb, Getenv: func(string) string { return "" }}, args)
	}()
	wait.For(t, 20*time.Second, ready, func() string { return "replay never got ready; stderr:\n" + errb.String() })
	cancel()
	start := time.Now()
	select {
	case code = <-done:
		after = time.Since(start)
	case <-time.After(10 * time.Second):
		t.Fatalf("replay did not return 10s after its context ended; stderr:\n%s", errb.String())
	}
	close(stop)
	if p := <-peak; p > base {
		heap = p - base
	}
	return code, errb.String(), after, heap
}

// A line with no end (/dev/zero, 'a' forever) is skipped once it passes
// --max-line-size, and reading goes on holding about the bound, not the
// line: 64 times the bound read, the heap stays under a few times the
// bound. Once interrupted, replay returns at once. Without the bound the
// heap grew with the input, by over a GiB here.
func TestReplayEndlessLineIsBounded(t *testing.T) {
	const bound = 4 << 20
	for _, c := range []byte{0, 'a'} {
		in := newEndlessInput(c)
		code, stderr, after, heap := replayUntil(t, in, func() bool { return in.served.Load() >= 64*bound },
			"--traces-exporter", "none", "--max-line-size", "4MiB", "-")
		t.Logf("byte %q: %d MiB read, heap peak %.1f MiB above the start, returned %v after the cancel",
			c, in.served.Load()>>20, float64(heap)/(1<<20), after.Round(time.Millisecond))
		if heap > 8*bound {
			t.Errorf("byte %q: the heap grew by %d MiB reading one endless line; want under %d MiB", c, heap>>20, 8*bound>>20)
		}
		if after > time.Second {
			t.Errorf("byte %q: replay took %v to return after the cancel, want under a second", c, after)
		}
		if code != 1 {
			t.Errorf("byte %q: exit %d, want 1 (nothing traced)", c, code)
		}
		for _, want := range []string{
			"pi-otel: -: line 1 is longer than 4 MiB (--max-line-size): skipped, counted as damaged\n",
			"pi-otel: interrupted before - had any records: nothing traced\n",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("byte %q: stderr lacks %q:\n%s", c, want, stderr)
			}
		}
	}
}

// The default bound holds too: replay of /dev/zero itself stays near
// --max-line-size's default, 256 MiB, not the gigabytes read.
func TestReplayDevZeroDefaultBound(t *testing.T) {
	if testing.Short() {
		t.Skip("reads gigabytes")
	}
	f, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	var served atomic.Int64
	in := readCounter{f, &served}
	code, stderr, after, heap := replayUntil(t, in, func() bool { return served.Load() >= 1<<30 },
		"--traces-exporter", "none", "-")
	t.Logf("/dev/zero: %d MiB read, heap peak %.1f MiB above the start, returned %v after the cancel",
		served.Load()>>20, float64(heap)/(1<<20), after.Round(time.Millisecond))
	if heap > 384<<20 {
		t.Errorf("the heap grew by %d MiB reading /dev/zero; want under 384 MiB (the bound is 256 MiB)", heap>>20)
	}
	if after > time.Second || code != 1 || !strings.Contains(stderr, "line 1 is longer than 256 MiB") {
		t.Errorf("exit %d after %v, stderr:\n%s", code, after, stderr)
	}
}

type readCounter struct {
	r io.Reader
	n *atomic.Int64
}

func (c readCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A pipe that never writes nor closes holds replay in a read; the
// interrupt ends it all the same.
func TestReplayQuietStdinIsInterruptible(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	start := time.Now()
	code, stderr, after, _ := replayUntil(t, pr, func() bool { return time.Since(start) > 200*time.Millisecond },
		"--traces-exporter", "none", "-")
	if after > time.Second || code != 1 || !strings.Contains(stderr, "interrupted before - had any records") {
		t.Errorf("exit %d after %v, stderr:\n%s", code, after, stderr)
	}
}

// A line over the bound in the middle of a real capture, or of a real
// session file, is skipped and counted as damaged; the lines after it
// are traced as without it.
func TestReplaySkipsLongLine(t *testing.T) {
	long := append(bytes.Repeat([]byte("x"), 1<<20), '\n')
	for _, c := range []struct {
		file, want string
	}{
		{"testdata/captures/pi-1.6.0/bash-tool.jsonl", "1 line over --max-line-size skipped"},
		{"testdata/sessions/pi-1.6.0/bash-tool.jsonl", "3 damaged lines skipped (1 of them over --max-line-size)"},
	} {
		data := repo.Read(t, c.file)
		lines := bytes.SplitAfter(data, []byte("\n"))
		var in []byte
		for i, l := range lines {
			in = append(in, l...)
			if i == 2 {
				in = append(in, long...)
			}
		}
		// So that the session file has damage of its own to count too.
		if strings.Contains(c.file, "sessions") {
			in = append(in, "{not json\n{\"type\":\n"...)
		}
		path := writeTemp(t, in)
		code, spans, stderr := replayArgs(t, path, "--max-line-size", "64KiB")
		_, plain, _ := replayArgs(t, repo.Path(c.file))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", c.file, code, stderr)
		}
		if !strings.Contains(stderr, ": line 4 is longer than 64 KiB (--max-line-size): skipped, counted as damaged\n") || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: stderr does not name the long line, or want %q:\n%s", c.file, c.want, stderr)
		}
		if got, want := strings.Count(spans, `"spanId"`), strings.Count(plain, `"spanId"`); got != want || want == 0 {
			t.Errorf("%s: %d spans with the long line, %d without", c.file, got, want)
		}
	}
}

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "in-*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// The first few long lines are named, the rest only counted, so that a
// file of them does not flood stderr; the exit line counts them all.
func TestReplayNamesFewLongLines(t *testing.T) {
	long := append(bytes.Repeat([]byte("y"), 16<<10), '\n')
	in := append(bytes.Repeat(long, 7), repo.Read(t, "testdata/captures/pi-1.6.0/bash-tool.jsonl")...)
	code, _, stderr := replayArgs(t, writeTemp(t, in), "--max-line-size", "8KiB")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "is longer than 8 KiB (--max-line-size)"); n != tooLongSaid {
		t.Errorf("%d long lines named, want %d:\n%s", n, tooLongSaid, stderr)
	}
	for _, want := range []string{": line 5 is longer than 8 KiB (--max-line-size): skipped, counted as damaged; more are counted, not named\n", "7 lines over --max-line-size skipped"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// Interrupted in the middle of a line, replay traces what came before it
// and drops the line cut short, instead of decoding it to find it
// damaged (a second for a long line) and warning about it.
func TestReplayInterruptDropsTheCutLine(t *testing.T) {
	endless := newEndlessInput('a')
	capture := repo.Read(t, "testdata/captures/pi-1.6.0/bash-tool.jsonl")
	in := io.MultiReader(bytes.NewReader(capture), endless)
	code, stderr, after, _ := replayUntil(t, in, func() bool { return endless.served.Load() >= 8<<20 },
		"--traces-exporter", "none", "-")
	if code != 0 || after > time.Second {
		t.Fatalf("exit %d after %v, want 0 within a second: %s", code, after, stderr)
	}
	if !strings.Contains(stderr, "pi-otel: 1 trace") || strings.Contains(stderr, "malformed") {
		t.Errorf("want the capture's trace and no malformed record:\n%s", stderr)
	}
}
