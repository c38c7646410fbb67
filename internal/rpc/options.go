package rpc

import (
	"time"
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
type Option interface {
	apply(config) config
}

type optionFunc func(config) config

func (f optionFunc) apply(c config) config { return f(c) }

// WithContent turns on opt-in content capture: Pi's error texts and
// extension error messages are recorded through s.
func WithContent(s Scrubber) Option {
	return optionFunc(func(c config) config { c.content = s; return c })
}

// WithMaxPending bounds the commands awaiting a response (default 1024).
// Past it the oldest is ended unanswered and counted in Stats.Evicted.
func WithMaxPending(n int) Option {
	return optionFunc(func(c config) config {
		if n > 0 {
			c.maxPending = n
		}
		return c
	})
}

// WithMaxDialogs bounds the open extension dialogs (default 256).
func WithMaxDialogs(n int) Option {
	return optionFunc(func(c config) config {
		if n > 0 {
			c.maxDialogs = n
		}
		return c
	})
}

// WithLookahead bounds how long tracing may wait for a prompt's response
// before deciding where the prompt's span goes (default 4096 records,
// 16 MiB, or 30 s of stream time, whichever comes first). Forwarding never
// waits; only span creation does.
func WithLookahead(records, bytes int, d time.Duration) Option {
	return optionFunc(func(c config) config {
		if records > 0 {
			c.holdRecords = records
		}
		if bytes > 0 {
			c.holdBytes = bytes
		}
		if d > 0 {
			c.holdFor = d
		}
		return c
	})
}
