package app

import (
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/outfile"
)

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
	deadline := time.Now().Add(20 * time.Second)
	for !ready() {
		if time.Now().After(deadline) {
			t.Fatalf("replay never got ready; stderr:\n%s", errb.String())
		}
		time.Sleep(time.Millisecond)
	}
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
