package vcs

import (
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Options that only tests set: the program never does, so they are no
// part of the package's API.

// WithGit names the git binary (default: git on PATH).
func WithGit(bin string) Option { return option.Func[config](func(c *config) { c.git = bin }) }

// WithTimeout bounds the read (default DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return option.Func[config](func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	})
}
