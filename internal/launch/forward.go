//go:build unix

package launch

import (
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// forwardedSignals are the signals that reach pi-otel in place of Pi: the
// ones that end or interrupt it, and the harmless ones a wrapper should not
// swallow.
func forwardedSignals() []os.Signal {
	return []os.Signal{
		syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH,
	}
}

// SignalAction is what the forwarder did with one signal.
type SignalAction int

const (
	// SignalForwarded: the signal was sent to the child.
	SignalForwarded SignalAction = iota + 1
	// SignalDuplicate: a SIGINT or SIGTERM arrived within the duplicate
	// window of the first one forwarded; it was taken for a copy of the
	// same event and dropped.
	SignalDuplicate
	// SignalEscalated: a second SIGINT or SIGTERM; the child was sent
	// SIGKILL.
	SignalEscalated
)

func (a SignalAction) String() string {
	switch a {
	case SignalForwarded:
		return "forwarded"
	case SignalDuplicate:
		return "duplicate"
	case SignalEscalated:
		return "escalated"
	}
	return "SignalAction(" + strconv.Itoa(int(a)) + ")"
}

// SignalEvent describes one signal the forwarder handled.
type SignalEvent struct {
	Signal syscall.Signal // the signal pi-otel received
	Action SignalAction
	// Err is the error from signalling the child, if any
	// (os.ErrProcessDone when it had already been reaped).
	Err error
}

// ForwardSignals relays SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2
// and SIGWINCH from pi-otel to the child's PID until the child exits or
// stop is called. The first SIGINT or SIGTERM is forwarded; another one
// after the duplicate window kills the child with SIGKILL, so a second
// Ctrl-C always ends the wait.
//
// A signal pi-otel was started with ignored (nohup, a background job
// without job control) is forwarded too, and the child decides: it was
// started before forwarding began, so it inherited the same dispositions
// and reacts as it would if signalled directly. (Node, and so Pi, resets
// them to the default at startup.)
//
// When the child has been reaped, relaying stops before Wait returns and
// pi-otel's default signal behaviour is back, unless the caller registered
// its own signal.Notify. stop does the same earlier and waits for the
// forwarding goroutine to finish; it may be called more than once, but not
// from the observer. A second ForwardSignals call adds a second forwarder.
func (p *Process) ForwardSignals(opts ...ForwardOption) (stop func()) {
	cfg := newForwardConfig(opts)
	ch := make(chan os.Signal, 16)

	p.mu.Lock()
	if p.exited {
		p.mu.Unlock()
		return func() {}
	}
	signal.Notify(ch, forwardedSignals()...)
	p.forwarding = append(p.forwarding, ch)
	p.mu.Unlock()

	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		f := forwarder{p: p, cfg: cfg}
		for {
			select {
			case <-quit:
				return
			case <-p.done:
				return
			case s := <-ch:
				f.handle(s.(syscall.Signal))
			}
		}
	}()

	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			signal.Stop(ch)
			p.forwarding = slices.DeleteFunc(p.forwarding, func(c chan os.Signal) bool { return c == ch })
			p.mu.Unlock()
			close(quit)
		})
		<-finished
	}
}

type forwarder struct {
	p   *Process
	cfg forwardConfig

	termForwarded bool
	firstTerm     time.Time
}

func (f *forwarder) handle(sig syscall.Signal) {
	ev := SignalEvent{Signal: sig}
	terminating := sig == syscall.SIGINT || sig == syscall.SIGTERM
	now := time.Now()
	switch {
	case terminating && f.termForwarded && now.Sub(f.firstTerm) < f.cfg.duplicateWindow:
		ev.Action = SignalDuplicate
	case terminating && f.termForwarded:
		ev.Action = SignalEscalated
		ev.Err = f.p.Signal(syscall.SIGKILL)
	default:
		ev.Action = SignalForwarded
		ev.Err = f.p.Signal(sig)
		if terminating {
			f.termForwarded = true
			f.firstTerm = now
		}
	}
	if f.cfg.observe != nil {
		f.cfg.observe(ev)
	}
}
