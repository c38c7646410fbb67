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

// Defaults of the watch settings, for callers that set them without
// loading; the settings table states the same (a test holds them equal).
const (
	DefaultSettle     = 30 * time.Second
	DefaultCloseAfter = 30 * time.Minute
)

// RegisterWatchFlags defines the flags of pi-otel watch on fs, next to
// those of RegisterFlags.
func RegisterWatchFlags(fs *flag.FlagSet) { register(fs, watchSettings) }

// LoadWatch resolves the watch settings from fs (see RegisterWatchFlags)
// and the environment, flag before variable before default.
func LoadWatch(fs *flag.FlagSet, getenv func(string) string) (Watch, error) {
	l := &loader{s: newSources(fs, getenv)}
	var w Watch
	w.State, _, _ = l.get(row("state"))
	if v, from, ok := l.get(row("since")); ok {
		if strings.EqualFold(v, "all") {
			w.SinceAll = true
		} else if d, err := parseSince(v); err != nil {
			l.fail("%s %q: want all, or a duration such as 24h or 7d", from, v)
		} else {
			w.Since = d
		}
	}
	l.duration(&w.Settle, row("settle"))
	l.duration(&w.CloseAfter, row("close-after"))
	l.duration(&w.Poll, row("poll"))
	l.boolean(&w.WaitLock, row("wait-lock"))
	if w.CloseAfter < w.Settle {
		l.fail("--close-after (%s) must be at least --settle (%s)", w.CloseAfter, w.Settle)
	}
	return loaded(l, &w, &w.Warnings)
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
