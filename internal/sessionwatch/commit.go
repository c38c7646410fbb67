package sessionwatch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// work runs what is due: files to read again after a failed export,
// files whose name went away, settled and abandoned runs, then a commit;
// then it drops the tracers of files that have been quiet for CloseAfter.
func (f *Follower) work(ctx context.Context) {
	now := f.cfg.Now()
	if !f.retryAt.IsZero() && !now.Before(f.retryAt) && len(f.uncommitted) == 0 {
		f.retryAt = time.Time{}
		for _, fi := range f.files {
			if fi.retry {
				fi.retry = false
				f.refresh(fi)
			}
		}
	}
	for _, fi := range f.files {
		if !fi.missing.IsZero() && now.Sub(fi.missing) >= missingGrace {
			f.gone(fi) // not found under another name
		}
	}
	for _, fi := range f.files {
		f.due(fi, now)
	}
	f.commit(ctx, false)
	for _, fi := range f.files {
		f.dropQuiet(fi, now)
	}
	if (!f.saveAt.IsZero() && !now.Before(f.saveAt)) || (f.moves && f.saveAt.IsZero()) {
		f.saveState() // a save that failed, again; or new names
	}
}

// dropQuiet frees the tracer of a file quiet for CloseAfter whose runs are
// committed, until the file grows again.
func (f *Follower) dropQuiet(fi *file, now time.Time) {
	if fi.tr != nil && now.Sub(fi.active()) >= f.cfg.CloseAfter && !f.uncommitted[fi] {
		f.dropTracer(fi)
		f.refresh(fi) // unless it grew while closed
	}
}

// gone closes a file that disappeared: what is open is traced, since no
// more will come.
func (f *Follower) gone(fi *file) {
	fi.missing = time.Time{}
	if fi.tr != nil {
		if !fi.closed {
			fi.tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
		}
		f.progress(fi)
	}
	if f.uncommitted[fi] {
		// Commit it with the others, then forget it.
		fi.tr, fi.removed = nil, true
		return
	}
	f.forget(fi)
}

func (f *Follower) forget(fi *file) {
	if f.files[fi.path] == fi {
		delete(f.files, fi.path)
	}
	if f.byID[fi.id] == fi {
		delete(f.byID, fi.id)
	}
	delete(f.uncommitted, fi)
}

// commit flushes and, if the exporter (or the spool) took everything,
// moves the places of the files with newly traced runs and saves the
// state. If not, those files are read again from their committed places
// after a pause.
func (f *Follower) commit(ctx context.Context, final bool) {
	if len(f.uncommitted) == 0 {
		return
	}
	now := f.cfg.Now()
	if !final && now.Before(f.retryAt) {
		return
	}
	if err := f.cfg.Flush(ctx, final); err != nil {
		if ctx.Err() != nil && !final {
			return // stopping: the final flush decides
		}
		f.stats.Failures++
		f.backoff = min(max(2*f.backoff, 5*time.Second), 5*time.Minute)
		f.retryAt = now.Add(f.backoff)
		switch {
		case !final:
			f.cfg.Logf("the exporter did not accept every span (%v); the runs are traced again in %s", err, f.backoff)
		case f.cfg.StatePath != "":
			f.cfg.Logf("the exporter did not accept every span (%v); those runs are traced at the next start", err)
		}
		// Without a state file there is no next start: the summary line
		// counts the loss.
		for fi := range f.uncommitted {
			fi.counted = max(fi.counted, fi.pending)
			fi.pending = fi.committed
			f.dropTracer(fi)
			if fi.removed {
				f.forget(fi)
				continue
			}
			fi.size, fi.retry = fi.committed, true
		}
		clear(f.uncommitted)
		return
	}
	f.stats.Commits++
	f.backoff, f.retryAt = 0, time.Time{}
	for fi := range f.uncommitted {
		fi.committed, fi.at = fi.pending, now
		if fi.removed {
			f.forget(fi)
		}
	}
	clear(f.uncommitted)
	f.saveState()
}

// stop ends a run of the follower: the last appends are read, open runs
// are closed if Ending says so, and a final flush commits what it can. Its
// error is a state that could not be saved.
func (f *Follower) stop() error {
	ctx := context.Background()
	end, closing := agentmap.Ending{}, false
	if f.cfg.Ending != nil {
		end, closing = f.cfg.Ending()
	}
	if closing {
		f.scan(false) // what Pi wrote just before it exited
		for _, fi := range f.files {
			if fi.tr != nil && !fi.closed {
				fi.tr.Close(end)
				f.progress(fi)
			}
		}
	}
	if len(f.uncommitted) == 0 {
		// Nothing to commit, but the exporter still shuts down.
		_ = f.cfg.Flush(ctx, true)
	} else {
		f.retryAt = time.Time{}
		f.commit(ctx, true)
	}
	if f.fatal == nil && !f.saveAt.IsZero() {
		// The last chance for a save that failed.
		f.saveFails = maxSaveFails - 1
		f.saveState()
	}
	return f.fatal
}

// maxSaveFails is how many saves of the state in a row may fail before
// watch gives up: every start after would trace again what was exported.
const maxSaveFails = 5

// saveState writes the places. A failure is counted, said once, and the
// save tried again after a pause (1s, 2s, 4s...); after maxSaveFails in a
// row, Run ends with the error.
func (f *Follower) saveState() {
	if f.cfg.StatePath == "" {
		return
	}
	files := make([]FileState, 0, len(f.byID))
	for _, fi := range f.byID {
		if fi.removed {
			continue
		}
		if fi.tailAt != fi.committed {
			fi.tail, fi.tailAt = tailOf(fi.path, fi.committed), fi.committed
		}
		files = append(files, FileState{Session: fi.session, Dev: fi.id.dev, Ino: fi.id.ino, Path: fi.path,
			Committed: fi.committed, Tail: fi.tail, At: unixOrZero(fi.at)})
	}
	f.state.Files = files
	f.moves = false
	err := f.state.Save(f.cfg.StatePath)
	if err == nil {
		f.saveFails, f.saveAt = 0, time.Time{}
		return
	}
	f.stats.StateFails++
	f.saveFails++
	if f.saveFails >= maxSaveFails {
		f.fatal = fmt.Errorf("cannot save the state to %s (%d tries): %w; without it, the next start would trace again what was exported", f.cfg.StatePath, f.saveFails, err)
		f.saveAt = time.Time{}
		return
	}
	f.logOnce("state", "saving the state to %s: %v (trying again)", f.cfg.StatePath, err)
	f.saveAt = f.cfg.Now().Add(time.Second << (f.saveFails - 1))
}

// sessionOf is the session id of a header line, "" if it has none.
func sessionOf(first []byte) string {
	var h header
	if json.Unmarshal(first, &h) != nil {
		return ""
	}
	return h.ID
}
