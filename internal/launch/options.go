//go:build unix

package launch

import (
	"syscall"
	"time"
)

// defaultParentDeathSignal is what Pi gets if pi-otel dies first. SIGTERM
// lets Pi run its own shutdown (it kills the bash-tool children it tracks
// and exits 143); WithParentDeathSignal(syscall.SIGKILL) trades that for a
// guarantee against a child that ignores SIGTERM.
const defaultParentDeathSignal = syscall.SIGTERM

// defaultDuplicateWindow separates one signal event delivered twice from a
// person asking twice. GNU timeout signals its child and then its whole
// process group; a Go process receives both copies in about a third of runs,
// measured 60–150 µs apart. A deliberate second Ctrl-C comes much later.
const defaultDuplicateWindow = 250 * time.Millisecond

type config struct {
	env            []string
	stdinPipe      bool
	inheritStdout  bool
	parentDeathSig syscall.Signal
}

func newConfig(opts []Option) config {
	c := config{parentDeathSig: defaultParentDeathSignal}
	for _, o := range opts {
		c = o.apply(c)
	}
	return c
}

// Option configures [Start].
type Option interface {
	apply(config) config
}

type optionFunc func(config) config

func (f optionFunc) apply(c config) config { return f(c) }

// WithEnv adds "KEY=value" entries to the environment the child inherits
// from pi-otel. A key that is already set is overridden; later entries win.
// The executable is still looked up in pi-otel's own PATH.
func WithEnv(kv ...string) Option {
	kv = append([]string(nil), kv...)
	return optionFunc(func(c config) config {
		c.env = append(c.env, kv...)
		return c
	})
}

// WithStdinPipe gives the child a pipe as stdin, written through
// [Process.Stdin], instead of pi-otel's own stdin. The RPC proxy needs this
// to see the commands it forwards.
func WithStdinPipe() Option {
	return optionFunc(func(c config) config {
		c.stdinPipe = true
		return c
	})
}

// WithInheritStdout gives the child pi-otel's own stdout instead of a
// pipe, so a terminal stays a terminal (Pi's TUI); [Process.Stdout] is then
// nil.
func WithInheritStdout() Option {
	return optionFunc(func(c config) config {
		c.inheritStdout = true
		return c
	})
}

// WithParentDeathSignal sets the signal the child receives if pi-otel dies
// while it runs, even by SIGKILL (default SIGTERM). Zero disables it. It has
// effect only where the kernel offers it (Linux and FreeBSD).
func WithParentDeathSignal(sig syscall.Signal) Option {
	return optionFunc(func(c config) config {
		c.parentDeathSig = sig
		return c
	})
}

type forwardConfig struct {
	duplicateWindow time.Duration
	observe         func(SignalEvent)
}

func newForwardConfig(opts []ForwardOption) forwardConfig {
	c := forwardConfig{duplicateWindow: defaultDuplicateWindow}
	for _, o := range opts {
		c = o.applyForward(c)
	}
	return c
}

// ForwardOption configures [Process.ForwardSignals].
type ForwardOption interface {
	applyForward(forwardConfig) forwardConfig
}

type forwardOptionFunc func(forwardConfig) forwardConfig

func (f forwardOptionFunc) applyForward(c forwardConfig) forwardConfig { return f(c) }

// WithDuplicateWindow sets how soon after a forwarded SIGINT or SIGTERM
// another one counts as a copy of the same event rather than a second
// request (default 250 ms). Copies are dropped; a later one escalates to
// SIGKILL. Zero makes every second signal escalate. Negative values are
// ignored.
func WithDuplicateWindow(d time.Duration) ForwardOption {
	return forwardOptionFunc(func(c forwardConfig) forwardConfig {
		if d >= 0 {
			c.duplicateWindow = d
		}
		return c
	})
}

// WithSignalObserver calls fn once for every signal the forwarder handles,
// after acting on it, so the caller can log it or record it on a span. fn
// runs on the forwarding goroutine and must return promptly.
func WithSignalObserver(fn func(SignalEvent)) ForwardOption {
	return forwardOptionFunc(func(c forwardConfig) forwardConfig {
		c.observe = fn
		return c
	})
}
