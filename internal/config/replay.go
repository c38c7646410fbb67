package config

import (
	"flag"
	"math"
	"time"
)

// Replay holds the settings of pi-otel replay that are not telemetry.
type Replay struct {
	// Warnings name environment values that were ignored (see Load).
	Warnings []string
	// Follow keeps reading the file as it grows, until interrupted.
	Follow bool
	// Poll is how often a followed file is looked at for new data.
	Poll time.Duration
	// MaxLine, above 0, is the longest line traced; longer ones are
	// skipped.
	MaxLine int
}

// RegisterReplayFlags defines the flags of pi-otel replay on fs, next to
// those of RegisterFlags.
func RegisterReplayFlags(fs *flag.FlagSet) { register(fs, replaySettings) }

// LoadReplay resolves the replay settings from fs (see
// RegisterReplayFlags) and the environment, flag before variable before
// default.
func LoadReplay(fs *flag.FlagSet, getenv func(string) string) (Replay, error) {
	l := &loader{s: newSources(fs, getenv)}
	var r Replay
	l.boolean(&r.Follow, tableRow(replaySettings, "follow"))
	l.duration(&r.Poll, tableRow(replaySettings, "poll"))
	var size int64
	read(l, &size, tableRow(replaySettings, "max-line-size"), parseSize,
		"%s %q: want a size such as 256MiB (B, KiB, MiB, GiB) or off")
	if size > 0 {
		r.MaxLine = int(min(size, math.MaxInt))
	}
	return loaded(l, &r, &r.Warnings)
}
