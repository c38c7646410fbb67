package rpc

import (
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Scrubber redacts and bounds one captured value. Giving one (content
// capture) records error texts in full, redacted, instead of masked.
type Scrubber interface {
	Scrub(s string) string
}

type config struct {
	content      Scrubber
	bashAnswered func(id string)
	maxPending   int
	maxDialogs   int
	holdRecords  int
	holdBytes    int
	holdFor      time.Duration
}

// Option configures a Tracker, in the OpenTelemetry SDK's style.
type Option = option.Option[config]

// WithContent turns on opt-in content capture: Pi's error texts and
// extension error messages are recorded through s.
func WithContent(s Scrubber) Option {
	return option.Func[config](func(c *config) { c.content = s })
}

// WithBashAnswered has fn told the id of each controller bash command
// Pi answers, as the response is read (before it reaches the
// controller): the end of that command's bash.
func WithBashAnswered(fn func(id string)) Option {
	return option.Func[config](func(c *config) { c.bashAnswered = fn })
}
