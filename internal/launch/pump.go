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
)

// orphanGrace is how long the reader may sit in an empty Read after the
// child has exited before Pump stops waiting for the pipe's EOF.
const orphanGrace = 500 * time.Millisecond

// Pump runs forward over the child's stdout and waits for the child to
// exit. A process the child left behind (a bash tool's child after SIGINT)
// can hold the pipe open long after the child is gone; once the child has
// exited and the reader has waited in Read for orphanGrace with nothing to
// read, the pipe is closed so the caller does not wait for that process. A
// reader held up by a slow consumer is not in Read, so no data is ever cut
// off. readErr is forward's error, unless it only saw that close; waitErr
// is Wait's.
func (p *Process) Pump(forward func(io.Reader) error) (s Status, readErr, waitErr error) {
	r := &watchedReader{r: p.Stdout()}
	done := make(chan error, 1)
	go func() { done <- forward(r) }()

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
					_ = p.Stdout().Close()
				}
			}
		}
	}
	if errors.Is(readErr, os.ErrClosed) {
		readErr = nil
	}
	s, waitErr = p.Wait()
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

// SignalName is the conventional name of s ("SIGTERM"), or "signal N".
func SignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	}
	return fmt.Sprintf("signal %d", int(s))
}
