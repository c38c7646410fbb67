package sessionwatch

import (
	"cmp"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// scan walks every root. At the first scan, files are placed according to
// the state and Since.
func (f *Follower) scan(initial bool) {
	if f.saveFails > 0 {
		f.stalled = true // nothing more is traced until the state is saved
		return
	}
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
	if initial && f.ctx != nil && f.ctx.Err() != nil {
		return // cut short: what was not seen was not looked at
	}
	for p, fi := range f.files {
		if !seen[p] {
			// Not under any name in the tree: a file moved within it was
			// found again by identity during the walk.
			f.gone(fi)
		}
	}
}

// walk adds watches for dir and every directory below it and looks at
// every session file; it returns the files found. The first scan reads
// the files of one session together, the largest first: a snapshot or a
// backup that stops mid-run then finds that run traced whole already.
func (f *Follower) walk(dir string, initial bool) []string {
	var found, later []string
	_ = walkTree(dir, func(p string, d fs.DirEntry, err error) error {
		if initial && f.stopping() {
			return filepath.SkipAll // stopping: the rest waits for the next start
		}
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				f.logOnce("dir "+p, "cannot read session folder %s: %v", p, err)
			}
			return nil
		}
		if d.IsDir() {
			f.watch(p, d)
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		if initial {
			if !f.cfg.Share.other(p) {
				later = append(later, p)
			}
		} else if fi := f.touch(p, false); fi != nil {
			found = append(found, fi.path)
		}
		return nil
	})
	if !initial {
		return found
	}
	// Each file is read and decoded, on a goroutine of its own, while the
	// file before it is traced (read): a history takes two cores. Until
	// its read ends, the scan has not come to it (goesOn).
	order := f.bySession(later)
	f.ahead = true
	var fi *file
	for i := 0; i <= len(order); i++ {
		var next *file
		if i < len(order) && !f.stopping() {
			next = f.touch(order[i], true) // its read begun: f.begun
		}
		if r := f.reading; r != nil {
			f.reading = nil
			f.endRead(r)
		}
		if fi != nil {
			found = append(found, fi.path)
			f.backfilled(fi)
		}
		f.reading, f.begun = f.begun, nil
		fi = next
	}
	f.ahead = false
	clear(f.headers) // those of files not placed (a second name)
	f.commitScan(true)
	return found
}

// maxAncestors bounds how far bySession follows parentSession headers.
const maxAncestors = 16

// parentFile is the index in byPath (the walk's paths, cleaned) of the
// parent a header names: by the path Pi wrote, which may run through a
// link the walk resolved.
func parentFile(byPath map[string]int, parentSession string) (int, bool) {
	if i, ok := byPath[filepath.Clean(parentSession)]; ok {
		return i, true
	}
	i, ok := byPath[realPath(parentSession)]
	return i, ok
}

// stopping reports whether the first scan is to stop: Run's context is
// done, or watch cannot go on.
func (f *Follower) stopping() bool {
	return f.ctx != nil && (f.ctx.Err() != nil || f.fatal != nil)
}

// bySession orders the files of a first scan: the files of one session
// together, the largest first, in the order of the session's first file;
// and a child session's files after its parent's (the header's
// parentSession), wherever the walk found them, so that the parent's
// trace has noted the tool that ran the child before the child is read:
// no parent's file is read again to find it (session.ParentTools). The
// headers read are kept for place.
func (f *Follower) bySession(paths []string) []string {
	type cand struct {
		path          string
		session       string
		parentSession string
		size          int64
		group, depth  int
	}
	groups := map[string]int{}
	byPath := make(map[string]int, len(paths))
	cs := make([]cand, 0, len(paths))
	lr := headerReader()
	for _, p := range paths {
		c := cand{path: p}
		if pt, ok := f.cfg.Share.seen(p); ok {
			c.size, c.session, c.parentSession = pt.size, pt.session, pt.parentSession
		} else {
			if st, err := os.Stat(p); err == nil {
				c.size = st.Size()
			}
			h, _ := readHeaderWith(p, lr)
			c.session, c.parentSession = h.ID, h.ParentSession
		}
		f.headers[p] = c.session
		g, ok := groups[c.session]
		if !ok || c.session == "" {
			g = len(cs) // where the session first comes
			groups[c.session] = g
		}
		c.group = g
		byPath[filepath.Clean(p)] = len(cs)
		cs = append(cs, c)
	}
	for i := range cs {
		// Ancestors among the scanned files; a cycle (a hostile header)
		// stops at the bound.
		for j, n := i, 0; n < maxAncestors; n++ {
			ps := cs[j].parentSession
			if ps == "" {
				break
			}
			k, ok := parentFile(byPath, ps)
			if !ok {
				break
			}
			cs[i].depth++
			j = k
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.depth != b.depth {
			return a.depth - b.depth
		}
		if a.group != b.group {
			return a.group - b.group
		}
		return int(b.size - a.size)
	})
	out := paths[:0]
	for _, c := range cs {
		out = append(out, c.path)
	}
	return out
}

// backfilled finishes a file the first scan has read: what is due is
// traced, the tracer of a quiet file is dropped at once (its runs wait in
// the exporter, not in memory), and the pass commits as it goes.
func (f *Follower) backfilled(fi *file) {
	if fi.tr != nil {
		now := f.cfg.Now()
		if f.due(fi, now) {
			f.closeQuiet(fi)
		}
		if now.Sub(fi.active(now)) >= f.cfg.CloseAfter && (fi.closed || fi.tr.Committed() >= fi.readOff) {
			// A new tracer, if the file grows, skips what is pending.
			f.dropTracer(fi)
		}
	}
	f.commitScan(false)
}

// commitScan commits the first scan's progress when enough is pending, or
// always.
func (f *Follower) commitScan(always bool) {
	now := f.cfg.Now()
	if f.scanCommitAt.IsZero() {
		f.scanCommitAt = now
	}
	if !always && f.scanBytes < f.cfg.CommitBytes && now.Sub(f.scanCommitAt) < f.cfg.CommitEvery {
		return
	}
	f.scanCommitAt, f.scanBytes = now, 0
	ctx := cmp.Or(f.ctx, context.Background())
	f.commit(ctx, false)
	if len(f.uncommitted) == 0 {
		f.saveState() // the places of files with nothing to trace too
	}
	// A state that cannot be saved holds the scan: going on would export
	// runs that no state records.
	for f.saveFails > 0 && f.fatal == nil && ctx.Err() == nil {
		t := time.NewTimer(max(f.saveAt.Sub(f.cfg.Now()), 10*time.Millisecond))
		select {
		case <-ctx.Done():
		case <-t.C:
			f.saveState()
		}
		t.Stop()
	}
}

// touch notes that path may have changed, and reads it. It returns the
// file's record, nil if path is not a followed file.
func (f *Follower) touch(path string, initial bool) *file {
	if !strings.HasSuffix(path, ".jsonl") {
		return nil
	}
	fi := f.files[path]
	if fi == nil {
		st, err := os.Stat(path)
		if err != nil || !st.Mode().IsRegular() {
			return nil
		}
		id := identity(st)
		if f.cfg.Share.otherFile(path, id) {
			return nil
		}
		other := f.byID[id]
		if other != nil && other.session != "" && headerSession(path) != other.session {
			// Its inode, freed, now holds another session: that file is
			// gone, and this one is new.
			f.gone(other)
			other = nil
		}
		if other != nil {
			if !f.moved(other, path) {
				return nil // the same file under a second name: followed once
			}
			fi = other
		} else {
			fi = f.place(path, st, id, initial)
			f.files[path] = fi
			f.byID[id] = fi
		}
		f.refreshAs(fi, st, nil) // the stat just taken: nothing was read since
		return f.files[path]
	}
	f.refresh(fi)
	return f.files[path] // another file, if fi was replaced under its name
}

// moved reports whether fi, found again at path, left its old name (a
// rename or a move), and if so follows it there with its place, its tracer
// and its runs: nothing is read or traced again. If the old name still
// names it, path is a second name of the same file.
func (f *Follower) moved(fi *file, path string) bool {
	if !f.orphans[fi] {
		if st, err := os.Stat(fi.path); err == nil && identity(st) == fi.id {
			return false
		}
	}
	if f.files[fi.path] == fi {
		delete(f.files, fi.path)
	}
	delete(f.orphans, fi)
	fi.path, fi.missing = path, time.Time{}
	f.files[path] = fi
	f.moves = true // saved with the next work, under its new name
	return true
}

// vanished notes that fi's name went away; the file is looked for under
// other names until missingGrace has passed.
func (f *Follower) vanished(fi *file) {
	if st, err := os.Stat(fi.path); err == nil && st.Mode().IsRegular() {
		f.refresh(fi) // replaced under its name, or still there
		return
	}
	if fi.missing.IsZero() {
		fi.missing = f.cfg.Now()
	}
}

// replaced notes that another file took fi's name: fi waits, nameless,
// to be found under another name, and the name is looked at afresh.
func (f *Follower) replaced(fi *file) {
	f.settle(fi)
	if f.files[fi.path] == fi {
		delete(f.files, fi.path)
	}
	f.orphans[fi] = true
	if fi.missing.IsZero() {
		fi.missing = f.cfg.Now()
	}
	f.touch(fi.path, false)
}

// place makes the record of a file seen for the first time. Where to read
// from comes from the state: the place of this file, or of a copy of it,
// when the bytes before it are the same. What is traced is the claims'
// business, not the place's. At the first start, the sessions on disk get
// their history bound (Since), and files older than it are placed at
// their end, not read.
func (f *Follower) place(path string, st os.FileInfo, id fileID, initial bool) *file {
	fi := &file{path: path, id: id, mtime: st.ModTime(), tailAt: -1, live: !initial || !f.first}
	if sid, ok := f.headers[path]; ok {
		fi.session = sid
		delete(f.headers, path)
	} else {
		fi.session = headerSession(path)
	}
	if s, ok := f.state.resume(id, fi.session); ok && s.Committed <= st.Size() && tailOf(path, s.Committed) == s.Tail {
		if f.state.legacy {
			// An older state knew only places: the runs before it are
			// read once, to be recorded (ledger.Traced).
			fi.skip = s.Committed
			return fi
		}
		fi.committed, fi.pending, fi.size = s.Committed, s.Committed, s.Committed
		fi.tail, fi.tailAt = s.Tail, s.Committed
		return fi
	}
	if initial && f.first && f.since != SinceAll {
		if fi.session != "" {
			f.ledger.History(fi.session, f.since)
		}
		if st.ModTime().Before(f.since) {
			// Nothing began after the bound: only what is appended from
			// now on. (A file without a header has no session to bound:
			// its place is all there is.)
			fi.committed, fi.pending, fi.size, fi.skip = st.Size(), st.Size(), st.Size(), st.Size()
		}
	}
	return fi
}

// identity is a file's device and inode.
func identity(st os.FileInfo) fileID {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return fileID{uint64(s.Dev), s.Ino} // Dev is int32 on some platforms
	}
	return fileID{}
}

// headerSession reads the session id of a file's header, "" if none.
func headerSession(path string) string {
	h, _ := readHeader(path)
	return h.ID
}

// tailLen is how many bytes before a committed place its checksum covers.
const tailLen = 256

// tailOf is the checksum of the bytes just before off; 0 for none.
func tailOf(path string, off int64) uint32 {
	if off <= 0 {
		return 0
	}
	fh, err := openFile(path)
	if err != nil {
		return 0
	}
	defer fh.Close()
	start := max(0, off-tailLen)
	b := make([]byte, off-start)
	if _, err := fh.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
		return 0
	}
	return crc32.ChecksumIEEE(b)
}
