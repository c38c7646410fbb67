package sessionwatch

import (
	"context"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

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
// every session file; it returns the files found.
func (f *Follower) walk(dir string, initial bool) []string {
	var found []string
	_ = walkTree(dir, func(p string, d fs.DirEntry, err error) error {
		if initial && f.ctx != nil && (f.ctx.Err() != nil || f.fatal != nil) {
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
		fi := f.touch(p, initial)
		if fi != nil {
			found = append(found, fi.path)
		}
		if initial && fi != nil {
			f.backfilled(fi)
		}
		return nil
	})
	if initial {
		f.commitScan(true)
	}
	return found
}

// backfilled finishes a file the first scan has read: what is due is
// traced, the tracer of a quiet file is dropped at once (its runs wait in
// the exporter, not in memory), and the pass commits as it goes.
func (f *Follower) backfilled(fi *file) {
	if fi.tr != nil {
		now := f.cfg.Now()
		f.due(fi, now)
		if now.Sub(fi.active()) >= f.cfg.CloseAfter && (fi.closed || fi.tr.Committed() >= fi.readOff) {
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
	ctx := f.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	f.commit(ctx, false)
	if len(f.uncommitted) == 0 {
		f.saveState() // the places of files with nothing to trace too
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
		if other := f.byID[id]; other != nil {
			if !f.moved(other, path) {
				return nil // the same file under a second name: followed once
			}
			fi = other
		} else {
			fi = f.place(path, st, id, initial)
			f.files[path] = fi
			f.byID[id] = fi
		}
	}
	f.refresh(fi)
	return fi
}

// moved reports whether fi, found again at path, left its old name (a
// rename or a move), and if so follows it there with its place, its tracer
// and its runs: nothing is read or traced again. If the old name still
// names it, path is a second name of the same file.
func (f *Follower) moved(fi *file, path string) bool {
	if st, err := os.Stat(fi.path); err == nil && identity(st) == fi.id {
		return false
	}
	delete(f.files, fi.path)
	fi.path, fi.missing = path, time.Time{}
	f.files[path] = fi
	f.stats.Moved++
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

// place makes the record of a file seen for the first time, from the state
// (found by identity, else by session id) or, at the first start, from
// Since.
func (f *Follower) place(path string, st os.FileInfo, id fileID, initial bool) *file {
	fi := &file{path: path, id: id, mtime: st.ModTime()}
	s, ok := f.state.byIdentity(id)
	if ok {
		fi.expect = s.Session
	} else if len(f.state.bySession) > 0 {
		// Copied or moved from another file system: the same session, a
		// new inode; the same bytes up to its place, or it was rewritten.
		if sid := headerSession(path); sid != "" {
			if s2, ok2 := f.state.bySessionID(sid); ok2 {
				fi.session = sid
				if s2.Committed <= st.Size() && tailOf(path, s2.Committed) == s2.Tail {
					s, ok = s2, true
				} else if s2.At != 0 {
					fi.since = time.Unix(s2.At, 0)
					return fi
				}
			}
		}
	}
	if ok && s.Committed <= st.Size() {
		fi.committed, fi.pending = s.Committed, s.Committed
		fi.tail, fi.tailAt = s.Tail, s.Committed
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
		case f.since.IsZero(), st.ModTime().Before(f.since):
			// History: only what is appended from now on.
			fi.committed, fi.pending, fi.size = st.Size(), st.Size(), st.Size()
		case f.since != SinceAll:
			fi.since = f.since
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
	fh, err := os.Open(path)
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
