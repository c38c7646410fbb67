package rpc

import (
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Options that only tests set: the program never does, so they are no
// part of the package's API.

// WithMaxPending bounds the commands awaiting a response (default 1024).
// Past it the oldest is ended unanswered and counted in Stats.Evicted.
func WithMaxPending(n int) Option {
	return option.Func[config](func(c *config) { setPositive(&c.maxPending, n) })
}

// WithMaxDialogs bounds the open extension dialogs (default 256).
func WithMaxDialogs(n int) Option {
	return option.Func[config](func(c *config) { setPositive(&c.maxDialogs, n) })
}

// WithLookahead bounds how long tracing may wait for a prompt's response
// before deciding where the prompt's span goes (default 4096 records,
// 16 MiB, or 30 s of stream time, whichever comes first). Forwarding never
// waits; only span creation does.
func WithLookahead(records, bytes int, d time.Duration) Option {
	return option.Func[config](func(c *config) {
		setPositive(&c.holdRecords, records)
		setPositive(&c.holdBytes, bytes)
		setPositive(&c.holdFor, d)
	})
}

// setPositive sets *dst to v unless v is 0 or less: every bound keeps its
// default when given a value that would disable it.
func setPositive[T int | time.Duration](dst *T, v T) {
	if v > 0 {
		*dst = v
	}
}
