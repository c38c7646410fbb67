package report

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// ParseBound reads a --since or --until value: a date (2026-12-01, the
// start of that day in loc; for until, the day is included), a date and
// time (2026-12-01T15:04, in loc unless it names its offset), or a
// duration back from now (24h, 7d, 2w). until says which end it is.
func ParseBound(v string, now time.Time, loc *time.Location, until bool) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := parseAgo(v); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{"20060102", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			if until {
				t = t.AddDate(0, 0, 1) // the whole day
			}
			return t, nil
		}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("want a date such as 2026-12-01, a time such as 2026-12-01T15:04, or a duration back from now such as 24h or 7d")
}

// parseAgo reads a duration back from now: Go's (90m, 24h), or whole
// days or weeks (7d, 2w).
func parseAgo(v string) (time.Duration, error) {
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(v, suffix); ok {
			k, err := strconv.Atoi(n)
			if err != nil || k < 0 {
				return 0, errors.New("bad count")
			}
			return time.Duration(k) * unit, nil
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, errors.New("bad duration")
	}
	return d, nil
}

// ParseZone reads a --tz value: an IANA name (Europe/Berlin), UTC, or
// Local; "" is Local.
func ParseZone(v string) (*time.Location, error) {
	switch {
	case v == "", strings.EqualFold(v, "local"):
		return time.Local, nil
	case strings.EqualFold(v, "utc"):
		return time.UTC, nil
	}
	loc, err := time.LoadLocation(v)
	if err != nil {
		return nil, errors.New("want an IANA time zone such as Europe/Berlin, or UTC or Local")
	}
	return loc, nil
}
