package config

import (
	"errors"
	"flag"
	"strconv"
	"strings"
	"time"
)

// Watch holds the settings of pi-otel watch that are not telemetry.
type Watch struct {
	// Warnings name environment values that were ignored (see Load).
	Warnings []string
	// State is the state file; "" means the default under the user's
	// state directory.
	State string
	// SinceAll traces all history at the first start; otherwise Since,
	// when above 0, traces the files changed in the last Since, and 0
	// traces only new activity.
	SinceAll bool
	Since    time.Duration
	// Settle is how long a session is quiet after a final answer before
	// its run counts as complete.
	Settle time.Duration
	// CloseAfter is how long a run without a final answer may be quiet
	// before it is traced as unfinished.
	CloseAfter time.Duration
	// Poll, above 0, scans at this interval instead of using inotify.
	Poll time.Duration
	// WaitLock waits for the watcher that holds the state's lock to exit,
	// instead of exiting at once.
	WaitLock bool
}

// Defaults of the watch settings.
const (
	DefaultSettle     = 30 * time.Second
	DefaultCloseAfter = 30 * time.Minute
)

var watchFlagDefs = []flagDef{
	{name: "state", usage: "state `FILE` keeping watch's place in every session file (PI_OTEL_STATE; default $XDG_STATE_HOME/pi-otel/watch.json or ~/.local/state/pi-otel/watch.json)"},
	{name: "since", usage: "history to trace at the first start: a `DURATION` such as 24h or 7d, or all (PI_OTEL_SINCE; default: only new activity)"},
	{name: "settle", usage: "quiet time after a final answer before a run counts as complete, a `DURATION` (PI_OTEL_SETTLE; default 30s)"},
	{name: "close-after", usage: "quiet time after which a run with no final answer (Pi killed mid-run) is traced as unfinished, a `DURATION` (PI_OTEL_CLOSE_AFTER; default 30m)"},
	{name: "wait-lock", boolean: true, usage: "wait while another watch holds the state file's lock, and take over when it exits, instead of exiting with an error (PI_OTEL_WAIT_LOCK)"},
	{name: "poll", usage: "scan session directories at this `DURATION` instead of using inotify, e.g. on network file systems (PI_OTEL_POLL; default: inotify)"},
}

// RegisterWatchFlags defines the flags of pi-otel watch on fs, next to
// those of RegisterFlags.
func RegisterWatchFlags(fs *flag.FlagSet) { register(fs, watchFlagDefs) }

// LoadWatch resolves the watch settings from fs (see RegisterWatchFlags)
// and the environment, flag before variable before default.
func LoadWatch(fs *flag.FlagSet, getenv func(string) string) (Watch, error) {
	s := newSources(fs, getenv)
	l := &loader{s: s}
	w := Watch{Settle: DefaultSettle, CloseAfter: DefaultCloseAfter}
	if v, _, ok := s.lookup(flags("state"), "PI_OTEL_STATE"); ok {
		w.State = v
	}
	if v, from, ok := s.lookup(flags("since"), "PI_OTEL_SINCE"); ok {
		if strings.EqualFold(v, "all") {
			w.SinceAll = true
		} else if d, err := parseSince(v); err != nil {
			l.fail("%s %q: want all, or a duration such as 24h or 7d", from, v)
		} else {
			w.Since = d
		}
	}
	l.duration(&w.Settle, true, flags("settle"), "PI_OTEL_SETTLE")
	l.duration(&w.CloseAfter, false, flags("close-after"), "PI_OTEL_CLOSE_AFTER")
	l.duration(&w.Poll, false, flags("poll"), "PI_OTEL_POLL")
	l.boolean(&w.WaitLock, flags("wait-lock"), "PI_OTEL_WAIT_LOCK")
	if w.CloseAfter < w.Settle {
		l.fail("--close-after (%s) must be at least --settle (%s)", w.CloseAfter, w.Settle)
	}
	if err := errors.Join(l.errs...); err != nil {
		return Watch{}, err
	}
	w.Warnings = l.warnings
	return w, nil
}

// parseSince reads a duration, also in whole days ("7d").
func parseSince(v string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, errors.New("bad days")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return parseDuration(v)
}
