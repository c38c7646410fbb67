// Package sessionwatch follows directories of Pi session files and feeds
// every complete line of every file to a per-file tracer, the way tail -F
// follows one file, for thousands of files at once.
//
// It keeps no file open between reads: a change (inotify through fsnotify,
// or a poll) makes it stat the file, read what was appended up to the last
// complete line, and close it again. A half-written last line is left for
// the next read. A file that shrinks, is rewritten in place (the bytes
// before the place read changed) or is replaced under its name is read
// again from the start; a file that disappears is closed.
//
// A tracer exists only while its file is active. One that has been quiet
// long enough is dropped, and built again from the start of the file (with
// the runs already traced skipped) when the file grows again, so memory
// follows the number of active sessions, not of files.
//
// Progress is committed only after the exporter has accepted the spans
// (Config.Flush): a run is either traced and committed, or will be traced
// again from the committed place, after a failed export or a restart. A
// backfill (--since) commits as it goes, every Config.CommitEvery or
// CommitBytes, so a crash repeats at most that much.
//
// Files are known by what they are (device and inode, and the session id
// of the header), not by their names: see State. The code is split by
// idea: scan.go finds files, read.go reads them, commit.go commits.
package sessionwatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/pi-otel/pi-otel/internal/ledger"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// Tracer traces one session file; internal/session's FileMapper is one. Line
// gets each complete line (without its LF) and the byte offset it starts
// at; b is only valid during the call.
type Tracer interface {
	Line(off int64, b []byte)
	Idle(now time.Time, settle time.Duration) bool
	// Close traces what is open: no more will come. exited says why: the
	// program that wrote the file exited (Config.Exited), rather than the
	// file ending (gone, or quiet too long); the tracer's maker knows how
	// it exited.
	Close(exited bool)
	Committed() int64
	// LastEntry is the newest entry time seen, zero if none.
	LastEntry() time.Time
}

// TracerSpec is what a new Tracer is told.
type TracerSpec struct {
	Path string
	// SkipThrough: runs begun before this offset were traced by an earlier
	// pi-otel whose state knew only offsets (or, in a file without a
	// header, are history): not traced, only recorded in the ledger
	// (ledger.Traced).
	SkipThrough int64
}

// Config configures a Follower.
type Config struct {
	// Dirs are followed with every directory below them.
	Dirs []string
	// NewTracer makes the tracer for one file.
	NewTracer func(TracerSpec) Tracer
	// IsSession tells a session file by its first line (a header, or an
	// entry of a file without one); nil takes every *.jsonl file.
	IsSession func(first []byte) bool
	// Accept, if set, decides whether a file that shows new data is
	// followed at all (pi-otel run: only the files its Pi writes). It is
	// asked again while it answers decided=false.
	Accept func(path string) (ok, decided bool)
	// Share, if set, is the part of a history (Partition) this follower
	// reads, others reading the rest: its first scan passes over the
	// other parts' files before it stats them, and orders its own by
	// what Partition read of them; later scans tell a file moved since
	// by its identity.
	Share *Share
	// Flush exports what has been traced and returns nil only if the
	// exporter accepted every span. final is the last call, at exit.
	Flush func(ctx context.Context, final bool) error

	// StatePath is where places are kept between runs; "" keeps them in
	// memory only.
	StatePath string
	// Ledger, if set, is where the tracers claim the runs they trace:
	// kept in the state, its claims committed when the flush says their
	// spans were delivered and given back when not. Unset, the follower
	// keeps one the tracers do not see.
	Ledger *ledger.Ledger
	// ParentTools, if set, is what the tracers note of the tool spans
	// that ran child sessions: kept in the state, so that after a restart
	// no parent's file is read again for a child of a parent traced.
	ParentTools *session.ParentTools
	// Since is how far back to trace the sessions on disk at the first
	// start: zero traces only runs begun from now on, SinceAll traces
	// everything. Sessions that appear later are traced whole.
	Since time.Time
	// Settle is how long a session must be quiet after a final answer for
	// its run to count as complete.
	Settle time.Duration
	// CloseAfter is how long a session must be quiet for a run without a
	// final answer (Pi killed mid-run) to be traced as unfinished.
	CloseAfter time.Duration
	// Poll, if above 0, replaces inotify with a scan at this interval.
	Poll time.Duration
	// Rescan is the interval of a full scan even while inotify works, a
	// safety net for lost events (default 5m).
	Rescan time.Duration
	// Exited, if set, is asked when the follower stops: when true, the
	// program that wrote the files exited (Pi), and every open run is
	// traced as ended so (Tracer.Close(true)); otherwise open runs are
	// left for the next start.
	Exited func() bool

	// CommitEvery and CommitBytes pace the commits of a backfill (the
	// first scan with Since): one at least every CommitEvery or
	// CommitBytes read, whichever comes first (defaults 1s, 32 MB).
	CommitEvery time.Duration
	CommitBytes int64

	// Ready, if set, is called once the first scan is done: what changes
	// after it is new activity.
	Ready func()

	// Now and Logf default to time.Now and discarding.
	Now  func() time.Time
	Logf func(format string, args ...any)
}

// Validate reports a Config a Follower cannot run with; Run checks it.
// A duration or size at zero or below takes its default (New).
func (c Config) Validate() error {
	switch {
	case len(c.Dirs) == 0:
		return errors.New("sessionwatch: no directory to follow")
	case c.NewTracer == nil:
		return errors.New("sessionwatch: no NewTracer")
	}
	return nil
}

// SinceAll as Config.Since traces the whole history.
var SinceAll = time.Unix(0, 1)

// Stats counts what a follower did.
type Stats struct {
	Files      int   // files followed now
	Commits    int64 // successful commits
	Failures   int64 // flushes the exporter did not fully accept
	StateFails int64 // saves of the state that failed
	Tracers    int   // tracers alive now
}

// Follower follows session directories. Run it once.
type Follower struct {
	cfg   Config
	files map[string]*file // by path
	byID  map[fileID]*file // the same files, by identity
	// orphans are files whose name another file took: found again under
	// another name, or gone after missingGrace.
	orphans map[*file]bool
	state   State
	ledger  *ledger.Ledger
	first   bool
	// since is the first scan's history bound: Config.Since, now, or that
	// of the first scan a restart goes on with.
	since time.Time
	// headers are the session ids the first scan read, for place.
	headers map[string]string
	// stalled: events were passed over while the state could not be
	// saved; a scan catches up once it can.
	stalled bool
	watcher *fsnotify.Watcher
	watched map[string]bool
	// watchedAs is the name each watched directory's watch has in
	// fsnotify, by identity: a directory moved keeps its watch (watch).
	watchedAs map[fileID]string
	// readers are the line readers of reads done, kept for the next.
	readers []*framing.Reader
	// ahead: the first scan's walk, where a read only begins (read).
	ahead bool
	// begun is the read the walk's last touch began; reading, the one
	// before it, which the walk ends once that touch is done.
	begun, reading *aRead
	// uncommitted are the files with traced runs not yet flushed.
	uncommitted map[*file]bool
	retryAt     time.Time
	backoff     time.Duration
	stats       Stats
	said        map[string]bool
	ctx         context.Context // Run's, for the commits of the first scan
	final       bool            // stopping: the last reads are not cut short
	degraded    bool            // a directory could not be watched: scan often

	// The first scan's progress since its last commit.
	scanCommitAt time.Time
	scanBytes    int64

	// moves says a file was found under a new name since the last save.
	moves bool
	// childrenAt is the ParentTools.Changes that state.Children holds.
	childrenAt uint64

	// A state that could not be saved is saved again at saveAt; after
	// maxSaveFails failures in a row, Run ends with fatal.
	saveFails int
	saveAt    time.Time
	fatal     error
}

// fileID is what a file is while it stays on one file system.
type fileID struct{ dev, ino uint64 }

// decision is whether Config.Accept took a file.
type decision uint8

const (
	undecided decision = iota
	followed
	ignored
)

// file is one followed file. Without a tracer, readOff is 0 and the next
// growth past pending builds one.
type file struct {
	path      string
	id        fileID
	session   string // the header's session id, once read
	size      int64
	mtime     time.Time
	lastEntry time.Time // the newest entry's time, once read
	lastTried int64     // the size readLast last looked at, with this tracer
	readOff   int64     // start of the first line not yet fed
	committed int64     // accepted by the exporter
	pending   int64     // traced, waiting for a flush
	tail      uint32
	tailAt    int64  // the committed place tail was taken at
	readTail  uint32 // checksumAt readOff: the bytes read are still there
	// skip is TracerSpec.SkipThrough.
	skip int64
	// seen is the size refresh last saw (at least 1 once it looked); grew:
	// the file grew since, so it is a file being written, whatever its
	// entries' times say.
	seen int64
	grew bool
	// live: it may be being written, whatever its entries' times say: it
	// appeared after the first scan, or a restart's first scan found it.
	live bool
	tr   Tracer
	// nextIdle is when Idle is due: settle after the last line, then
	// again every settle while a run stays open (Pi's entry times and
	// the file's coarse mtime may differ by a clock tick); zero when
	// nothing is open.
	nextIdle time.Time
	retry    bool // read again from committed once retryAt has come
	closed   bool // the tracer was closed; it goes once committed
	accept   decision
	notSess  bool
	// missing is when the file's name went away (a rename or a remove
	// event): it is found again by identity, or closed after missingGrace.
	missing time.Time
	// removed: gone for good, forgotten once its last runs are committed.
	removed bool
}

// New returns a Follower.
func New(cfg Config) *Follower {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Settle <= 0 {
		cfg.Settle = DefaultSettle
	}
	if cfg.CloseAfter < cfg.Settle {
		cfg.CloseAfter = max(DefaultCloseAfter, cfg.Settle)
	}
	if cfg.Rescan <= 0 {
		cfg.Rescan = 5 * time.Minute
	}
	if cfg.CommitEvery <= 0 {
		cfg.CommitEvery = DefaultCommitEvery
	}
	if cfg.CommitBytes <= 0 {
		cfg.CommitBytes = DefaultCommitBytes
	}
	return &Follower{
		cfg:         cfg,
		files:       map[string]*file{},
		byID:        map[fileID]*file{},
		orphans:     map[*file]bool{},
		ledger:      cmp.Or(cfg.Ledger, ledger.New()),
		headers:     map[string]string{},
		watched:     map[string]bool{},
		watchedAs:   map[fileID]string{},
		uncommitted: map[*file]bool{},
		said:        map[string]bool{},
	}
}

// Defaults for Config.
const (
	DefaultSettle     = 30 * time.Second
	DefaultCloseAfter = 30 * time.Minute
	// A crash repeats at most this much of a backfill.
	DefaultCommitEvery = time.Second
	DefaultCommitBytes = 32 << 20
)

// Stats returns the counters; call it after Run returned, or from Run's
// goroutine.
func (f *Follower) Stats() Stats {
	s := f.stats
	s.Files = len(f.files)
	for _, fi := range f.files {
		if fi.tr != nil {
			s.Tracers++
		}
	}
	return s
}

// Run follows until ctx is done, then commits what the exporter accepted
// and returns. Its error is a setup failure (the state file); problems with
// single files are logged and the follower carries on.
func (f *Follower) Run(ctx context.Context) error {
	if err := f.cfg.Validate(); err != nil {
		return err
	}
	f.ctx = ctx
	if err := f.load(); err != nil {
		return err
	}

	var events <-chan fsnotify.Event
	var errs <-chan error
	if f.cfg.Poll <= 0 {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			f.cfg.Logf("inotify is not available (%v); polling every 2s", err)
			f.cfg.Poll = 2 * time.Second
		} else {
			f.watcher = w
			defer w.Close()
			events, errs = w.Events, w.Errors
		}
	}

	// The first start's scan marker and bound are saved before anything
	// is exported: a kill -9 before the first commit leaves a start that
	// goes on with the same scan. A state that cannot be saved stops watch
	// here, before it exports what it could not record.
	if f.cfg.StatePath != "" {
		if err := f.state.Save(f.cfg.StatePath); err != nil {
			f.stats.StateFails++
			return fmt.Errorf("%w to %s (%v): nothing was traced", ErrState, f.cfg.StatePath, err)
		}
	}
	f.scan(true)
	if ctx.Err() != nil || f.fatal != nil {
		// Stopped mid-scan: the state keeps Scan, so the next start goes
		// on with the files not yet seen instead of taking them for new.
		return f.stop()
	}
	f.state.Scan = nil
	f.saveState() // the first start's places, so a restart knows what was there
	if f.fatal != nil {
		return f.stop()
	}
	if f.cfg.Ready != nil {
		f.cfg.Ready()
	}
	f.work(ctx)

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	lastScan := f.cfg.Now()
	for {
		next := f.nextWake(lastScan)
		timer.Reset(max(time.Until(next), time.Millisecond))
		select {
		case <-ctx.Done():
			return f.stop()
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			f.event(ev)
			// Take what else is queued before reading, so a burst of
			// appends costs one read.
			for more := true; more; {
				select {
				case ev, ok := <-events:
					if ok {
						f.event(ev)
					} else {
						events, more = nil, false
					}
				default:
					more = false
				}
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				f.scan(false) // events were lost: look at everything
				lastScan = f.cfg.Now()
			} else {
				f.logOnce("inotify", "watching session directories: %v", err)
			}
		case <-timer.C:
		}
		if interval := f.scanInterval(); f.cfg.Now().Sub(lastScan) >= interval && f.saveFails == 0 {
			f.scan(false)
			lastScan = f.cfg.Now()
		}
		f.work(ctx)
		if f.fatal != nil {
			return f.stop()
		}
	}
}

// load reads the state, or starts an empty one.
func (f *Follower) load() error {
	f.since = f.cfg.Since
	if f.cfg.StatePath == "" {
		f.state, f.first = State{Version: stateVersion}, true
		f.state.index()
	} else {
		st, first, err := LoadState(f.cfg.StatePath)
		if err != nil {
			return err
		}
		f.state, f.first = st, first
		if err := f.ledger.Load(st.Sessions); err != nil {
			return fmt.Errorf("state file %s is damaged (%v); move it away to start over", f.cfg.StatePath, err)
		}
		if pt := f.cfg.ParentTools; pt != nil {
			if err := restoreChildren(pt, st.Children); err != nil {
				return fmt.Errorf("state file %s is damaged (%v); move it away to start over", f.cfg.StatePath, err)
			}
			f.childrenAt = pt.Changes()
		}
	}
	switch st := &f.state; {
	case st.Scan != nil:
		// A first scan cut short: the same bound, whatever this start asks.
		f.since = time.Unix(0, st.Scan.Since)
	case f.first:
		if f.since.IsZero() {
			f.since = f.cfg.Now() // history: only runs begun from now on
		}
		st.Scan = &ScanState{Since: f.since.UnixNano()}
	}
	return nil
}

func (f *Follower) scanInterval() time.Duration {
	if f.cfg.Poll > 0 {
		return f.cfg.Poll
	}
	if f.degraded {
		return 2 * time.Second
	}
	for _, d := range f.cfg.Dirs {
		if !f.rootWatched(d) {
			return 2 * time.Second // a root that does not exist yet
		}
	}
	return f.cfg.Rescan
}

// nextWake is the earliest time something is due: a settle or close
// deadline, a retry, a file whose name went away, the next scan.
func (f *Follower) nextWake(lastScan time.Time) time.Time {
	next := lastScan.Add(f.scanInterval())
	for fi := range f.orphans {
		next = earlier(next, fi.missing.Add(missingGrace))
	}
	for _, fi := range f.files {
		if !fi.missing.IsZero() {
			next = earlier(next, fi.missing.Add(missingGrace))
		}
		if fi.tr == nil {
			continue
		}
		if !fi.nextIdle.IsZero() {
			next = earlier(next, fi.nextIdle)
		}
		now := f.cfg.Now()
		if quiet := fi.active(now).Add(f.cfg.CloseAfter); !fi.closed && !f.uncommitted[fi] && (quiet.After(now) || !f.goesOn(fi, now)) {
			// Due now, if active went back to the entries' time since due
			// last looked. (A tracer past its close, or with runs waiting
			// for a commit, waits for the commit; one whose session goes on
			// in another file waits for that file's deadline.)
			next = earlier(next, quiet)
		}
		if probed := fi.mtime.Add(growthProbe); fi.live && probed.After(now) {
			next = earlier(next, probed) // active may then go back to the entries' time
		}
	}
	if !f.retryAt.IsZero() {
		next = earlier(next, f.retryAt)
	}
	if !f.saveAt.IsZero() {
		next = earlier(next, f.saveAt)
	}
	return next
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// event reacts to one inotify event; while the state cannot be saved, the
// scan after it catches up instead.
func (f *Follower) event(ev fsnotify.Event) {
	if f.saveFails > 0 {
		f.stalled = true
		return
	}
	switch {
	case ev.Has(fsnotify.Create):
		st, err := os.Stat(ev.Name) // a link to a folder is a folder
		if err != nil {
			return
		}
		if st.IsDir() {
			f.walk(ev.Name, false)
			return
		}
		f.touch(ev.Name, false)
	case ev.Has(fsnotify.Write):
		f.touch(ev.Name, false)
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		// The name went away: the file may come back under another
		// (a move into archive/), found by identity, or be gone.
		if fi := f.files[ev.Name]; fi != nil {
			f.vanished(fi)
		}
		if f.watched[ev.Name] {
			delete(f.watched, ev.Name)
			if ev.Has(fsnotify.Remove) {
				f.forgetWatch(ev.Name) // a moved one keeps its watch (watch)
			}
			// Files below it were removed too, or moved away.
			prefix := ev.Name + string(filepath.Separator)
			for p, fi := range f.files {
				if strings.HasPrefix(p, prefix) {
					f.vanished(fi)
				}
			}
			f.unwatchBelow(prefix, ev.Has(fsnotify.Rename))
		}
	}
}

// missingGrace is how long a file whose name went away is kept, open,
// waiting to be found under a new name, before it is closed as gone.
const missingGrace = 2 * time.Second

func (f *Follower) logOnce(key, format string, args ...any) {
	if f.said[key] {
		return
	}
	f.said[key] = true
	f.cfg.Logf(format, args...)
}

// String describes a follower's stats for the summary line.
func (s Stats) String() string {
	if s.Files == 1 {
		return "1 session file followed"
	}
	return fmt.Sprintf("%d session files followed", s.Files)
}
