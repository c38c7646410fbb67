//go:build unix

package launch

import (
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
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
	return option.Apply(config{parentDeathSig: defaultParentDeathSignal}, opts)
}

// Option configures [Start].
type Option = option.Option[config]

// WithEnv adds "KEY=value" entries to the environment the child inherits
// from pi-otel. A key that is already set is overridden; later entries win.
// The executable is still looked up in pi-otel's own PATH.
func WithEnv(kv ...string) Option {
	kv = append([]string(nil), kv...)
	return option.Func[config](func(c *config) { c.env = append(c.env, kv...) })
}

// WithStdinPipe gives the child a pipe as stdin, written through
// [Process.Stdin], instead of pi-otel's own stdin. The RPC proxy needs this
// to see the commands it forwards.
func WithStdinPipe() Option {
	return option.Func[config](func(c *config) { c.stdinPipe = true })
}

// WithInheritStdout gives the child pi-otel's own stdout instead of a
// pipe, so a terminal stays a terminal (Pi's TUI); [Process.Stdout] is then
// nil.
func WithInheritStdout() Option {
	return option.Func[config](func(c *config) { c.inheritStdout = true })
}

type forwardConfig struct {
	duplicateWindow time.Duration
	observe         func(SignalEvent)
}

func newForwardConfig(opts []ForwardOption) forwardConfig {
	return option.Apply(forwardConfig{duplicateWindow: defaultDuplicateWindow}, opts)
}

// ForwardOption configures [Process.ForwardSignals]. It is a type of its
// own so that a Start option cannot be passed there by mistake.
type ForwardOption = option.Option[forwardConfig]

// WithSignalObserver calls fn once for every signal the forwarder handles,
// after acting on it, so the caller can log it or record it on a span. fn
// runs on the forwarding goroutine and must return promptly.
func WithSignalObserver(fn func(SignalEvent)) ForwardOption {
	return option.Func[forwardConfig](func(c *forwardConfig) { c.observe = fn })
}
