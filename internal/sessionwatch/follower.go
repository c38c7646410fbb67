// Package sessionwatch follows directories of Pi session files and feeds
// every complete line of every file to a per-file tracer, the way tail -F
// follows one file, for thousands of files at once.
//
// It keeps no file open between reads: a change (inotify through fsnotify,
// or a poll) makes it stat the file, read what was appended up to the last
// complete line, and close it again. A half-written last line is left for
// the next read. A file that shrinks or is replaced under its name is read
// again from the start; a file that disappears is closed.
//
// A tracer exists only while its file is active. One that has been quiet
// long enough is dropped, and built again from the start of the file (with
// the runs already traced skipped) when the file grows again, so memory
// follows the number of active sessions, not of files.
//
// Progress is committed only after the exporter has accepted the spans
// (Config.Flush): a run is either traced and committed, or will be traced
// again from the committed place, after a failed export or a restart.
package sessionwatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Tracer traces one session file; internal/session's Tracer is one. Line
// gets each complete line (without its LF) and the byte offset it starts
// at; b is only valid during the call.
type Tracer interface {
	Line(off int64, b []byte)
	Idle(now time.Time, settle time.Duration) bool
	Close(end agentmap.Ending)
	Committed() int64
}

// TracerSpec is what a new Tracer is told: runs ending at or before
// SkipThrough, or begun before Since, are decoded but not traced.
type TracerSpec struct {
	Path        string
	SkipThrough int64
	Since       time.Time
}

// Config configures a Follower.
type Config struct {
	// Dirs are followed with every directory below them.
	Dirs []string
	// NewTracer makes the tracer for one file.
	NewTracer func(TracerSpec) Tracer
	// IsSession tells a session file by its first line; nil takes every
	// *.jsonl file.
	IsSession func(first []byte) bool
	// Accept, if set, decides whether a file that shows new data is
	// followed at all (pi-otel run: only the files its Pi writes). It is
	// asked again while it answers decided=false.
	Accept func(path string) (ok, decided bool)
	// Flush exports what has been traced and returns nil only if the
	// exporter accepted every span. final is the last call, at exit.
	Flush func(ctx context.Context, final bool) error

	// StatePath is where places are kept between runs; "" keeps them in
	// memory only.
	StatePath string
	// Since is how far back to trace files that are not in the state at
	// the first start: zero traces only what is appended from now on,
	// SinceAll traces everything.
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
	// Ending, if set, is asked when the follower stops: when ok, every
	// open run is traced as ended so (Pi exited); otherwise open runs are
	// left for the next start.
	Ending func() (end agentmap.Ending, ok bool)

	// Ready, if set, is called once the first scan is done: what changes
	// after it is new activity.
	Ready func()

	// Now and Logf default to time.Now and discarding.
	Now  func() time.Time
	Logf func(format string, args ...any)
}

// SinceAll as Config.Since traces the whole history.
var SinceAll = time.Unix(0, 1)

// Stats counts what a follower did.
type Stats struct {
	Files     int   // files followed now
	Lines     int64 // complete lines read
	Commits   int64 // successful commits
	Failures  int64 // flushes the exporter did not fully accept
	Tracers   int   // tracers alive now
	Rescanned int64 // full scans
}

// Follower follows session directories. Run it once.
type Follower struct {
	cfg     Config
	files   map[string]*file
	state   State
	first   bool
	watcher *fsnotify.Watcher
	watched map[string]bool
	buf     []byte
	// uncommitted are the files with traced runs not yet flushed.
	uncommitted map[*file]bool
	retryAt     time.Time
	backoff     time.Duration
	stats       Stats
	said        map[string]bool
	ctx         context.Context // Run's, for the commits of the first scan
	batch       []*file         // files of the first scan since its last commit
	degraded    bool            // a directory could not be watched: scan often
}

// file is one followed file. Without a tracer, readOff is 0 and the next
// growth past committed builds one.
type file struct {
	path      string
	dev, ino  uint64
	size      int64
	mtime     time.Time
	readOff   int64 // start of the first line not yet fed
	committed int64 // accepted by the exporter
	pending   int64 // traced, waiting for a flush
	at        time.Time
	since     time.Time
	tr        Tracer
	// nextIdle is when Idle is due: settle after the last line, then
	// again every settle while a run stays open (Pi's entry times and
	// the file's coarse mtime may differ by a clock tick); zero when
	// nothing is open.
	nextIdle time.Time
	retry    bool // read again from committed once retryAt has come
	closed   bool // the tracer was closed; it goes once committed
	accept   int8 // 1 followed, -1 ignored, 0 not decided
	notSess  bool
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
	return &Follower{
		cfg:         cfg,
		files:       map[string]*file{},
		watched:     map[string]bool{},
		uncommitted: map[*file]bool{},
		said:        map[string]bool{},
	}
}

// Defaults for Config.
const (
	DefaultSettle     = 30 * time.Second
	DefaultCloseAfter = 30 * time.Minute
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
	f.ctx = ctx
	if f.cfg.StatePath != "" {
		st, first, err := LoadState(f.cfg.StatePath)
		if err != nil {
			return err
		}
		f.state, f.first = st, first
	} else {
		f.state, f.first = State{Version: stateVersion, Files: map[string]FileState{}}, true
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

	f.scan(true)
	if ctx.Err() != nil {
		// Stopped mid-scan: a partial state would make the files not yet
		// seen look new at the next start.
		return f.stop()
	}
	f.saveState() // the first start's places, so a restart knows what was there
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
		if interval := f.scanInterval(); f.cfg.Now().Sub(lastScan) >= interval {
			f.scan(false)
			lastScan = f.cfg.Now()
		}
		f.work(ctx)
	}
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
// deadline, a retry, the next scan.
func (f *Follower) nextWake(lastScan time.Time) time.Time {
	next := lastScan.Add(f.scanInterval())
	for _, fi := range f.files {
		if fi.tr == nil {
			continue
		}
		if !fi.nextIdle.IsZero() {
			next = earlier(next, fi.nextIdle)
		}
		if closeAt := fi.mtime.Add(f.cfg.CloseAfter); closeAt.After(f.cfg.Now()) {
			next = earlier(next, closeAt)
		}
		// A tracer past its close is waiting for a commit: retryAt.
	}
	if !f.retryAt.IsZero() {
		next = earlier(next, f.retryAt)
	}
	return next
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// event reacts to one inotify event.
func (f *Follower) event(ev fsnotify.Event) {
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
		if fi := f.files[ev.Name]; fi != nil {
			f.refresh(fi)
		}
		if f.watched[ev.Name] {
			delete(f.watched, ev.Name)
			// Files below it were removed too, or moved away.
			prefix := ev.Name + string(filepath.Separator)
			for p, fi := range f.files {
				if strings.HasPrefix(p, prefix) {
					f.refresh(fi)
				}
			}
		}
	}
}

// scan walks every root. At the first scan, files are placed according to
// the state and Since.
func (f *Follower) scan(initial bool) {
	f.stats.Rescanned++
	seen := map[string]bool{}
	for _, d := range f.cfg.Dirs {
		found := f.walk(filepath.Clean(d), initial)
		for _, p := range found {
			seen[p] = true
		}
		if initial {
			f.sayRoot(d, len(found))
		}
	}
	for p, fi := range f.files {
		if !seen[p] {
			f.refresh(fi) // gone
		}
	}
}

// walk adds watches for dir and every directory below it and looks at
// every session file; it returns the files found.
func (f *Follower) walk(dir string, initial bool) []string {
	var found []string
	_ = walkTree(dir, func(p string, d fs.DirEntry, err error) error {
		if initial && f.ctx != nil && f.ctx.Err() != nil {
			return filepath.SkipAll // stopping: the rest waits for the next start
		}
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				f.logOnce("dir "+p, "cannot read session folder %s: %v", p, err)
			}
			return nil
		}
		if d.IsDir() {
			if f.watcher != nil && !f.watched[p] {
				if err := f.watcher.Add(p); err != nil {
					// Out of inotify watches, most likely: scan instead.
					f.logOnce("watch", "cannot watch %s (%v); session directories are scanned every 2s instead", p, err)
					f.degraded = true
				} else {
					f.watched[p] = true
				}
			} else if f.watcher == nil {
				f.watched[p] = true
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		found = append(found, p)
		f.touch(p, initial)
		if fi := f.files[p]; initial && fi != nil && fi.tr != nil {
			// History (--since): trace and commit as the scan goes, so
			// that a quiet file's tracer is gone before the next is read.
			now := f.cfg.Now()
			f.due(fi, now)
			f.batch = append(f.batch, fi)
			if len(f.uncommitted) >= scanBatch {
				f.commitBatch(now)
			}
		}
		return nil
	})
	if initial {
		f.commitBatch(f.cfg.Now())
	}
	return found
}

// scanBatch is how many files with traced history the first scan holds
// before a commit frees their tracers.
const scanBatch = 1024

func (f *Follower) commitBatch(now time.Time) {
	ctx := f.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	f.commit(ctx, false)
	for _, fi := range f.batch {
		f.dropQuiet(fi, now)
	}
	f.batch = nil
}

// touch notes that path may have changed, and reads it.
func (f *Follower) touch(path string, initial bool) {
	if !strings.HasSuffix(path, ".jsonl") {
		return
	}
	fi := f.files[path]
	if fi == nil {
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			return
		}
		fi = f.place(path, st, initial)
		f.files[path] = fi
	}
	f.refresh(fi)
}

// place makes the record of a file seen for the first time, from the state
// or, at the first start, from Since.
func (f *Follower) place(path string, st os.FileInfo, initial bool) *file {
	dev, ino := fileID(st)
	fi := &file{path: path, dev: dev, ino: ino, mtime: st.ModTime()}
	s, ok := f.state.Files[path]
	if ok && s.Dev == dev && s.Ino == ino && s.Committed <= st.Size() {
		fi.committed, fi.pending = s.Committed, s.Committed
		fi.at = time.Unix(s.At, 0)
		fi.size = min(s.Committed, st.Size())
		return fi
	}
	if ok && s.At != 0 { // replaced or shrunk while we were down: only runs begun since
		fi.since = time.Unix(s.At, 0)
	}
	// A file not in the state is new since the last run, or everything
	// is new at a first start: Since says how far back to go.
	if initial && f.first && !ok {
		switch {
		case f.cfg.Since.IsZero(), st.ModTime().Before(f.cfg.Since):
			// History: only what is appended from now on.
			fi.committed, fi.pending, fi.size = st.Size(), st.Size(), st.Size()
		case f.cfg.Since != SinceAll:
			fi.since = f.cfg.Since
		}
	}
	return fi
}

// refresh stats a file and reads what was appended; a file that is gone
// is closed and forgotten.
func (f *Follower) refresh(fi *file) {
	st, err := os.Stat(fi.path)
	if err != nil || !st.Mode().IsRegular() {
		f.gone(fi)
		return
	}
	dev, ino := fileID(st)
	size := st.Size()
	if dev != fi.dev || ino != fi.ino || size < fi.size || (fi.tr != nil && size < fi.readOff) {
		// Rewritten (Pi migrates old files in place) or replaced: read it
		// again from the start, tracing only runs begun since the last
		// commit; offsets before no longer mean anything.
		f.dropTracer(fi)
		fi.dev, fi.ino = dev, ino
		fi.committed, fi.pending, fi.size = 0, 0, 0
		fi.since = fi.at
		if fi.since.IsZero() {
			fi.since = f.cfg.Now()
		}
		delete(f.uncommitted, fi)
	}
	fi.mtime = st.ModTime()
	if fi.closed {
		return // what came after the close is read once the tracer is gone
	}
	if size == fi.size && fi.tr == nil {
		return
	}
	fi.size = size
	if fi.tr == nil && size <= fi.committed {
		return
	}
	f.read(fi)
}

// read feeds the complete lines appended since the last read.
func (f *Follower) read(fi *file) {
	if fi.notSess || fi.accept < 0 {
		return
	}
	if fi.accept == 0 {
		if f.cfg.Accept == nil {
			fi.accept = 1
		} else if ok, decided := f.cfg.Accept(fi.path); decided {
			fi.accept = map[bool]int8{true: 1, false: -1}[ok]
		}
		if fi.accept <= 0 {
			return
		}
	}
	fh, err := os.Open(fi.path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.logOnce("open "+fi.path, "reading %s: %v", fi.path, err)
		}
		return
	}
	defer fh.Close()
	if fi.tr == nil {
		if f.cfg.IsSession != nil {
			first, ok := firstLine(fh)
			if !ok {
				return // not even a whole header yet
			}
			if !f.cfg.IsSession(first) {
				fi.notSess = true
				return
			}
		}
		fi.tr = f.cfg.NewTracer(TracerSpec{Path: fi.path, SkipThrough: fi.committed, Since: fi.since})
		fi.readOff = 0
	}
	if _, err := fh.Seek(fi.readOff, io.SeekStart); err != nil {
		return
	}
	if f.buf == nil {
		f.buf = make([]byte, 64<<10)
	}
	have := 0 // bytes in buf, starting at fi.readOff
	for {
		if have == len(f.buf) { // one line longer than the buffer
			if f.buf = lineBuffer(fh, fi.readOff, f.buf); f.buf == nil {
				break // a line still being written: read it whole later
			}
		}
		n, err := fh.Read(f.buf[have:])
		have += n
		start := 0
		for {
			i := bytes.IndexByte(f.buf[start:have], '\n')
			if i < 0 {
				break
			}
			line := bytes.TrimSuffix(f.buf[start:start+i], []byte{'\r'})
			fi.tr.Line(fi.readOff, line)
			f.stats.Lines++
			fi.nextIdle = time.Time{} // set below, from the new mtime
			fi.readOff += int64(i + 1)
			start += i + 1
		}
		have = copy(f.buf, f.buf[start:have])
		if err != nil || n == 0 {
			break // the rest, if any, is a line still being written
		}
	}
	if fi.nextIdle.IsZero() {
		fi.nextIdle = fi.mtime.Add(f.cfg.Settle)
	}
	if len(f.buf) > 1<<20 {
		f.buf = nil // a huge line (an image) is not kept for the next read
	}
	f.progress(fi)
}

// firstLine reads the first complete line of fh.
func firstLine(fh *os.File) ([]byte, bool) {
	var b []byte
	chunk := make([]byte, 4096)
	for {
		n, err := fh.Read(chunk)
		b = append(b, chunk[:n]...)
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			return bytes.TrimSuffix(b[:i], []byte{'\r'}), true
		}
		if err != nil || n == 0 {
			return nil, false
		}
	}
}

// progress notes runs the tracer has traced since the last look.
func (f *Follower) progress(fi *file) {
	if fi.tr == nil {
		return
	}
	if c := fi.tr.Committed(); c > fi.pending {
		fi.pending = c
		f.uncommitted[fi] = true
	}
}

// gone closes a file that disappeared: what is open is traced, since no
// more will come.
func (f *Follower) gone(fi *file) {
	if fi.tr != nil {
		fi.tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
		f.progress(fi)
	}
	if f.uncommitted[fi] {
		// Commit it with the others, then forget it.
		fi.tr = nil
		fi.size = -1 // marks it gone
		return
	}
	f.forget(fi)
}

func (f *Follower) forget(fi *file) {
	delete(f.files, fi.path)
	delete(f.uncommitted, fi)
	delete(f.state.Files, fi.path)
}

func (f *Follower) dropTracer(fi *file) {
	fi.tr, fi.readOff, fi.nextIdle, fi.closed = nil, 0, time.Time{}, false
}

// work runs what is due: files to read again after a failed export,
// settled and abandoned runs, then a commit; then it drops the tracers of
// files that have been quiet for CloseAfter.
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
		f.due(fi, now)
	}
	f.commit(ctx, false)
	for _, fi := range f.files {
		f.dropQuiet(fi, now)
	}
}

// due runs what is due for one file: Idle once it has been quiet for
// settle, Close once it has been quiet for CloseAfter with a run open.
func (f *Follower) due(fi *file, now time.Time) {
	if fi.tr == nil || fi.closed {
		return
	}
	if !fi.nextIdle.IsZero() && !now.Before(fi.nextIdle) {
		fi.tr.Idle(now, f.cfg.Settle)
		f.progress(fi)
		if fi.tr.Committed() >= fi.readOff {
			fi.nextIdle = time.Time{} // nothing open
		} else {
			fi.nextIdle = now.Add(f.cfg.Settle)
		}
	}
	if now.Sub(fi.mtime) >= f.cfg.CloseAfter && fi.tr.Committed() < fi.readOff {
		fi.tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
		fi.closed, fi.nextIdle = true, time.Time{}
		f.progress(fi)
	}
}

// dropQuiet frees the tracer of a file quiet for CloseAfter whose runs are
// committed, until the file grows again.
func (f *Follower) dropQuiet(fi *file, now time.Time) {
	if fi.tr != nil && now.Sub(fi.mtime) >= f.cfg.CloseAfter && !f.uncommitted[fi] {
		f.dropTracer(fi)
		f.refresh(fi) // unless it grew while closed
	}
}

// commit flushes and, if the exporter took everything, moves the places
// of the files with newly traced runs and saves the state. If not, those
// files are read again from their committed places after a pause.
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
			fi.pending = fi.committed
			f.dropTracer(fi)
			if fi.size < 0 {
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
		if fi.size < 0 {
			f.forget(fi)
		}
	}
	clear(f.uncommitted)
	f.saveState()
}

// stop ends a run of the follower: the last appends are read, open runs
// are closed if Ending says so, and a final flush commits what it can.
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
		return nil
	}
	f.retryAt = time.Time{}
	f.commit(ctx, true)
	return nil
}

func (f *Follower) saveState() {
	if f.cfg.StatePath == "" {
		return
	}
	files := make(map[string]FileState, len(f.files))
	for p, fi := range f.files {
		if fi.size < 0 {
			continue
		}
		files[p] = FileState{Dev: fi.dev, Ino: fi.ino, Committed: fi.committed, At: unixOrZero(fi.at)}
	}
	f.state.Files = files
	if err := f.state.Save(f.cfg.StatePath); err != nil {
		f.logOnce("state", "saving the state to %s: %v", f.cfg.StatePath, err)
	}
}

func (f *Follower) logOnce(key, format string, args ...any) {
	if f.said[key] {
		return
	}
	f.said[key] = true
	f.cfg.Logf(format, args...)
}

func fileID(st os.FileInfo) (dev, ino uint64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Dev), s.Ino //nolint:unconvert // Dev is int on some platforms
	}
	return 0, 0
}

// String describes a follower's stats for the summary line.
func (s Stats) String() string {
	if s.Files == 1 {
		return "1 session file followed"
	}
	return fmt.Sprintf("%d session files followed", s.Files)
}
