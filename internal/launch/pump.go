//go:build unix

package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// orphanGrace is how long the reader may sit in an empty Read after the
// child has exited before the child's own output counts as all read.
const orphanGrace = 500 * time.Millisecond

// Pump runs forward over the child's stdout until the pipe's EOF, as a
// plain pipe would: a process the child left behind (a shell's `cmd &`)
// may hold the pipe and write long after the child is gone, and its
// output still reaches the consumer. drained, if set, is called once, on
// the caller's goroutine, as soon as the child has exited and its output
// is read: at EOF, or when the reader has waited in Read for orphanGrace
// with nothing to read. The caller finishes its own work there (a trace
// belongs to the child, not to its leftovers) while the pipe drains. A
// reader held up by a slow consumer is not in Read, so it never counts as
// drained early. readErr is forward's error; waitErr is Wait's.
func (p *Process) Pump(forward func(io.Reader) error, drained func(Status)) (s Status, readErr, waitErr error) {
	var src io.Reader = p.Stdout()
	if p.through != nil {
		src = p.through
	}
	r := &watchedReader{r: src}
	done := make(chan error, 1)
	go func() { done <- forward(r) }()
	called := false
	notify := func() {
		if !called && drained != nil {
			called = true
			st, _ := p.Wait()
			drained(st)
		}
	}

	select {
	case readErr = <-done:
	case <-p.Done():
		tick := time.NewTicker(orphanGrace / 5)
		defer tick.Stop()
	wait:
		for {
			select {
			case readErr = <-done:
				break wait
			case <-tick.C:
				if r.idle() > orphanGrace {
					notify()
				}
			}
		}
	}
	if errors.Is(readErr, os.ErrClosed) {
		readErr = nil // the caller closed the pipe on purpose
	}
	s, waitErr = p.Wait()
	notify()
	return s, readErr, waitErr
}

// watchedReader knows how long a Read has been waiting.
type watchedReader struct {
	r      io.Reader
	inRead atomic.Int64 // when the pending Read began (unix ns), or 0
}

func (w *watchedReader) Read(p []byte) (int, error) {
	w.inRead.Store(time.Now().UnixNano())
	n, err := w.r.Read(p)
	w.inRead.Store(0)
	return n, err
}

func (w *watchedReader) idle() time.Duration {
	since := w.inRead.Load()
	if since == 0 {
		return 0
	}
	return time.Since(time.Unix(0, since))
}

// Supervise relays the caller's terminating signals to the child
// (ForwardSignals) and makes a write to a closed stdout return EPIPE
// instead of killing the caller, so that it can still finish its work
// (close and export a trace). relayed reports the last signal passed on.
func (p *Process) Supervise() (relayed func() syscall.Signal, stop func()) {
	var last atomic.Int32
	stopForward := p.ForwardSignals(WithSignalObserver(func(ev SignalEvent) {
		if ev.Action == SignalForwarded {
			last.Store(int32(ev.Signal))
		}
	}))
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	return func() syscall.Signal { return syscall.Signal(last.Load()) }, func() {
		signal.Stop(pipe)
		stopForward()
	}
}

// SignalName is the conventional name of s ("SIGTERM", "SIGUSR1"), or
// "signal N" for a number the system does not name.
func SignalName(s syscall.Signal) string {
	if n := unix.SignalName(s); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}
