package launch

import (
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Options that only tests set: the program never does, so they are no
// part of the package's API.

// WithParentDeathSignal sets the signal the child receives if pi-otel dies
// while it runs, even by SIGKILL (default SIGTERM). Zero disables it. It has
// effect only where the kernel offers it (Linux and FreeBSD).
func WithParentDeathSignal(sig syscall.Signal) Option {
	return option.Func[config](func(c *config) { c.parentDeathSig = sig })
}

// WithDuplicateWindow sets how soon after a forwarded SIGINT or SIGTERM
// another one counts as a copy of the same event rather than a second
// request (default 250 ms). Copies are dropped; a later one escalates to
// SIGKILL. Zero makes every second signal escalate. Negative values are
// ignored.
func WithDuplicateWindow(d time.Duration) ForwardOption {
	return option.Func[forwardConfig](func(c *forwardConfig) {
		if d >= 0 {
			c.duplicateWindow = d
		}
	})
}
