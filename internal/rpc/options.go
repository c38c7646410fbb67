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
	content     Scrubber
	maxPending  int
	maxDialogs  int
	holdRecords int
	holdBytes   int
	holdFor     time.Duration
}

// Option configures a Tracker, in the OpenTelemetry SDK's style.
type Option = option.Option[config]

// WithContent turns on opt-in content capture: Pi's error texts and
// extension error messages are recorded through s.
func WithContent(s Scrubber) Option {
	return option.Func[config](func(c *config) { c.content = s })
}
