package session

import "time"

// Claims decides which runs a FileMapper traces. A key is the session id
// and the id of the run's first entry (or of a lone entry: a ! command, a
// compaction between runs); start is when the run began. Both identify
// the run: ids change when Pi migrates an old file, times do not.
type Claims interface {
	// Claim reports whether the run is traced now, and if so whether it
	// counts in the span metrics (not when it is traced again after a
	// failed export).
	Claim(session, key string, start time.Time) (trace, count bool)
	// Traced records a run an earlier pi-otel traced, known then only by
	// its offset (SkipThrough), so that it is never traced again.
	Traced(session, key string, start time.Time)
}

// claim decides whether the run or lone entry keyed key, starting at
// offset off and time start, is traced, and whether it counts.
func (t *FileMapper) claim(key string, off int64, start time.Time) (trace, count bool) {
	if off < t.cfg.SkipThrough {
		if t.cfg.Claims != nil {
			t.cfg.Claims.Traced(t.hdr.ID, key, start)
		}
		return false, false
	}
	if !t.cfg.Since.IsZero() && start.Before(t.cfg.Since) {
		return false, false
	}
	if t.cfg.Claims == nil {
		return true, true
	}
	return t.cfg.Claims.Claim(t.hdr.ID, key, start)
}
