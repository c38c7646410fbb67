package sessionwatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
)

// work runs what is due: files to read again after a failed export,
// files whose name went away, settled and abandoned runs, then a commit;
// then it drops the tracers of files that have been quiet for CloseAfter.
// While the state cannot be saved, nothing more is traced: only the save
// is tried again.
func (f *Follower) work(ctx context.Context) {
	now := f.cfg.Now()
	if f.saveFails > 0 {
		if !now.Before(f.saveAt) {
			f.saveState()
		}
		if f.saveFails > 0 {
			return
		}
		if f.stalled {
			f.stalled = false
			f.scan(false) // what changed while stalled
		}
	}
	if !f.retryAt.IsZero() && !now.Before(f.retryAt) {
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
	for fi := range f.orphans {
		if now.Sub(fi.missing) >= missingGrace {
			f.gone(fi) // its name taken by another file, itself found nowhere
		}
	}
	var closing []*file
	for _, fi := range f.files {
		if f.due(fi, now) {
			closing = append(closing, fi)
		}
	}
	// After every Idle, the larger files first: of two files of one
	// session (a backup made mid-run, a snapshot), the larger holds the run
	// whole, and whichever closes first claims it.
	slices.SortFunc(closing, func(a, b *file) int { return cmp.Compare(b.size, a.size) })
	for _, fi := range closing {
		f.closeQuiet(fi)
	}
	f.commit(ctx, false)
	for _, fi := range f.files {
		f.dropQuiet(fi, now)
	}
	if f.moves && f.saveAt.IsZero() {
		f.saveState() // new names
	}
}

// dropQuiet frees the tracer of a file quiet for CloseAfter whose runs are
// committed, until the file grows again.
func (f *Follower) dropQuiet(fi *file, now time.Time) {
	if fi.tr != nil && now.Sub(fi.active(now)) >= f.cfg.CloseAfter && !f.uncommitted[fi] &&
		(fi.closed || fi.tr.Committed() >= fi.readOff) { // an open run left to another file (goesOn) waits
		f.dropTracer(fi)
		f.refresh(fi) // unless it grew while closed
	}
}

// gone closes a file that disappeared. What is open is traced, since no
// more will come, unless another file of the same session is followed:
// the session goes on there (a temp file renamed over it), and so does
// its open run.
func (f *Follower) gone(fi *file) {
	f.settle(fi)
	fi.missing = time.Time{}
	delete(f.orphans, fi)
	if fi.tr != nil {
		if !fi.closed && !f.sessionFollowed(fi, nil) {
			fi.tr.Close(false)
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

// sessionFollowed reports whether a file other than fi, still under a
// name, holds fi's session (and, when also is set, passes it).
func (f *Follower) sessionFollowed(fi *file, also func(o *file) bool) bool {
	if fi.session == "" {
		return false
	}
	for _, o := range f.files {
		if o != fi && o.session == fi.session && o.missing.IsZero() && !o.removed && !f.unread(o) && (also == nil || also(o)) {
			return true
		}
	}
	return false
}

func (f *Follower) forget(fi *file) {
	if f.files[fi.path] == fi {
		delete(f.files, fi.path)
	}
	if f.byID[fi.id] == fi {
		delete(f.byID, fi.id)
	}
	delete(f.orphans, fi)
	delete(f.uncommitted, fi)
}

// commit flushes and, if the exporter (or the spool) took everything,
// makes the claims since the last commit permanent, moves the places of
// the files with newly traced runs and saves the state. If not, the claims
// are given back and those files read again from their committed places
// after a pause.
func (f *Follower) commit(ctx context.Context, final bool) {
	if len(f.uncommitted) == 0 && !f.ledger.Pending() {
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
		f.ledger.Fail()
		for fi := range f.uncommitted {
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
	f.ledger.Commit()
	for fi := range f.uncommitted {
		fi.committed = fi.pending
		if fi.removed {
			f.forget(fi)
		}
	}
	clear(f.uncommitted)
	f.saveState()
}

// stop ends a run of the follower: the last appends are read, open runs
// are closed if Exited says so, and a final flush commits what it can. Its
// error is a state that could not be saved.
func (f *Follower) stop() error {
	f.final = true
	ctx := context.Background()
	closing := f.cfg.Exited != nil && f.cfg.Exited()
	if closing && f.saveFails == 0 {
		f.scan(false) // what Pi wrote just before it exited
		for _, fi := range f.files {
			if fi.tr != nil && !fi.closed {
				fi.tr.Close(true)
				f.progress(fi)
			}
		}
	}
	if len(f.uncommitted) == 0 && !f.ledger.Pending() {
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

// ErrState is the error Run ends with when the state cannot be saved:
// going on would export runs that the next start traces again.
var ErrState = errors.New("the state cannot be saved")

// saveState writes the claims and the places. A failure is counted, said
// once, and the save tried again after a pause (1s, 2s, 4s...), while
// nothing more is traced; after maxSaveFails in a row, Run ends with
// ErrState.
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
			Committed: fi.committed, Tail: fi.tail})
	}
	f.state.Files = files
	f.state.index()
	f.state.Sessions = f.ledger.Save()
	if pt := f.cfg.ParentTools; pt != nil && pt.Changes() != f.childrenAt {
		f.state.Children, f.childrenAt = saveChildren(pt)
	}
	f.moves = false
	err := f.state.Save(f.cfg.StatePath)
	if err == nil {
		f.saveFails, f.saveAt = 0, time.Time{}
		return
	}
	f.stats.StateFails++
	f.saveFails++
	if f.saveFails >= maxSaveFails {
		f.fatal = fmt.Errorf("%w to %s (%d tries: %v); stopped, since the next start would trace again what was exported", ErrState, f.cfg.StatePath, f.saveFails, err)
		f.saveAt = time.Time{}
		return
	}
	f.logOnce("state", "saving the state to %s: %v (nothing more is traced until it can be saved; trying again)", f.cfg.StatePath, err)
	f.saveAt = f.cfg.Now().Add(time.Second << (f.saveFails - 1))
}

// sessionOf is the session id of a header line, "" if it has none; entry
// reports a first line that is an entry, not a header (a file without one).
func sessionOf(first []byte) (id string, entry bool) {
	h := event.ReadHeader(first)
	// A damaged line, or one whose type, id or parentSession is of another
	// kind, is neither.
	if !h.Valid || h.Mistyped&(event.FieldType|event.FieldID|event.FieldParentSession) != 0 {
		return "", false
	}
	if h.Type != event.TypeSession {
		return "", h.Type != ""
	}
	return h.ID, false
}
