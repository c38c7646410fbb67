package sessionwatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/pi-otel/pi-otel/internal/readahead"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// refresh stats a file and reads what was appended; a file whose name is
// gone waits to be found again (see vanished).
func (f *Follower) refresh(fi *file) {
	st, err := os.Stat(fi.path)
	f.refreshAs(fi, st, err)
}

// refreshAs is refresh with the stat of fi.path taken.
func (f *Follower) refreshAs(fi *file, st os.FileInfo, err error) {
	if err != nil || !st.Mode().IsRegular() {
		f.vanished(fi)
		return
	}
	fi.missing = time.Time{}
	if id := identity(st); id != fi.id {
		// Another file has this name now (a temp file renamed over it, a
		// move, a restore): this one left it. It is found again under
		// another name, or gone; the newcomer is a file of its own.
		f.replaced(fi)
		return
	}
	size := st.Size()
	if size < fi.size || (fi.tr != nil && size < fi.readOff) {
		f.rewritten(fi) // shrunk: the bytes read are no longer there
	}
	if fi.seen > 0 && size > fi.seen {
		fi.grew = true
	}
	fi.seen = max(size, 1)
	fi.mtime = st.ModTime()
	if fi.closed {
		return // what came after the close is read once the tracer is gone
	}
	if size == fi.size && fi.tr == nil {
		return
	}
	fi.size = size
	if fi.tr == nil && size <= fi.pending {
		return
	}
	f.read(fi)
}

// read feeds the complete lines appended since the last read. In the
// first scan's walk (ahead set) it only begins: the lines are read and
// decoded on a goroutine of their own while the file before is traced,
// and endRead finishes.
func (f *Follower) read(fi *file) {
	r := f.startRead(fi)
	if r == nil {
		return
	}
	if f.ahead && f.begun == nil {
		f.begun = r
		return
	}
	f.endRead(r)
}

// aRead is a file's read begun: its lines are read and decoded ahead, on
// a goroutine of their own, when its tracer is a Predecoder.
type aRead struct {
	fi    *file
	fh    *os.File
	ahead *readahead.Ahead
	lr    *framing.Reader // at readOff; it may hold the bytes after
}

// startRead opens fi, makes its tracer if it has none, and begins reading
// what was appended since the last read.
func (f *Follower) startRead(fi *file) *aRead {
	if fi.notSess || fi.accept == ignored {
		return nil
	}
	if fi.accept == undecided {
		if f.cfg.Accept == nil {
			fi.accept = followed
		} else if ok, decided := f.cfg.Accept(fi.path); decided {
			fi.accept = ignored
			if ok {
				fi.accept = followed
			}
		}
		if fi.accept != followed {
			return nil
		}
	}
	fh, err := openFile(fi.path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.logOnce("open "+fi.path, "reading %s: %v", fi.path, err)
		}
		return nil
	}
	if fi.tr != nil && fi.readOff > 0 && checksumAt(fh, fi.readOff) != fi.readTail {
		// Rewritten in place and grown past where it was read (cp or >
		// over it, an editor's save): the bytes read are another file's.
		f.rewritten(fi)
	}
	// A reader of its own: the file before may still be read by another.
	r := &aRead{fi: fi, fh: fh, lr: f.reader(fh, fi.readOff)}
	if fi.tr == nil {
		// The header is read by the reader the lines are read by, and
		// what came with it is not read again.
		if !f.newTracer(fi, r.lr) {
			f.putReader(r.lr)
			fh.Close()
			return nil
		}
		r.lr.Rewind(fi.readOff)
	}
	if p, ok := fi.tr.(Predecoder); ok {
		decode, lr := p.Predecode(), r.lr
		r.ahead = readahead.Start(func(emit func(func(), int)) {
			f.readLines(lr, func(off int64, line []byte, n int) { emit(decode(off, line), n) })
		})
	}
	return r
}

// endRead feeds the lines startRead began to read, and notes where the
// file was read to.
func (f *Follower) endRead(r *aRead) {
	fi, fh := r.fi, r.fh
	defer fh.Close()
	if r.ahead != nil {
		r.ahead.Drain(func(n int) { f.fed(fi, n) })
		f.putReader(r.lr)
		if fi.tr == nil {
			return // the file was let go while it was read (settle)
		}
	} else {
		defer f.putReader(r.lr)
		f.readLines(r.lr, func(off int64, line []byte, n int) {
			fi.tr.Line(off, line)
			f.fed(fi, n)
		})
	}
	fi.readTail = checksumAt(fh, fi.readOff)
	if t := fi.tr.LastEntry(); !t.IsZero() {
		fi.lastEntry = t
	}
	if fi.nextIdle.IsZero() {
		fi.nextIdle = fi.active(f.cfg.Now()).Add(f.cfg.Settle)
	}
	f.progress(fi)
}

// unread reports whether fi's read is begun ahead and not yet ended: the
// first scan has not come to it yet.
func (f *Follower) unread(fi *file) bool {
	return f.begun != nil && f.begun.fi == fi || f.reading != nil && f.reading.fi == fi
}

// settle ends a read of fi begun ahead, before what would change fi
// under it (a file gone, rewritten or replaced while the first scan reads
// the one before it).
func (f *Follower) settle(fi *file) {
	for _, p := range []**aRead{&f.reading, &f.begun} {
		if r := *p; r != nil && r.fi == fi {
			*p = nil
			f.endRead(r)
		}
	}
}

// reader is a line reader of fh from off on, with the buffer of an
// earlier read: a huge line's is not kept (WithRetain).
func (f *Follower) reader(fh *os.File, off int64) *framing.Reader {
	if n := len(f.readers); n > 0 {
		lr := f.readers[n-1]
		f.readers = f.readers[:n-1]
		lr.ResetAt(fh, off)
		return lr
	}
	return framing.NewReaderAt(fh, off, framing.WithReadSize(readSize), framing.WithRetain(1<<20))
}

// putReader keeps a reader for the next read, letting go of its file.
func (f *Follower) putReader(lr *framing.Reader) {
	lr.ResetAt(nil, 0)
	f.readers = append(f.readers, lr)
}

// readLines calls line with each complete line lr reads, at its offset,
// and the line's length with its LF; line is only valid during the call.
// It stops at a line still being written.
func (f *Follower) readLines(lr *framing.Reader, line func(off int64, b []byte, n int)) {
	for {
		if f.ctx != nil && f.ctx.Err() != nil && !f.final {
			return // a signal: the rest is read at the next start
		}
		b, err := lr.Next()
		if err != nil {
			return
		}
		line(lr.Offset(), b, int(lr.End()-lr.Offset()))
	}
}

// fed notes a line of n bytes (with its LF) fed to fi's tracer.
func (f *Follower) fed(fi *file, n int) {
	f.scanBytes += int64(n)
	fi.nextIdle = time.Time{} // set by read, from the new mtime
	fi.readOff += int64(n)
}

// Predecoder is a Tracer whose lines can be decoded ahead, on the
// goroutine that reads them, while the lines before them are traced:
// decoding is a third to a half of a history's cost. Predecode is as
// session.FileMapper's: its function takes each line in order, on that
// goroutine, and returns the rest of the line's work, which the follower
// runs in the same order on its own.
type Predecoder interface {
	Predecode() func(off int64, b []byte) func()
}

// active is when the file was last written to: its modification time,
// or the time of its newest entry when that is older (a copy of an old
// session, cp without -p, is new to the file system only), but only for
// a file that has not grown under watch's eyes and, unless the first
// start's scan found it, has not been written to for growthProbe. A file
// copied into the session folder is history to close; a file still being
// copied, however old its entries, is not, also when a restart finds it
// so. The first start's scan takes the files on disk as they stand, as
// replay would.
func (fi *file) active(now time.Time) time.Time {
	if fi.grew || fi.lastEntry.IsZero() || !fi.lastEntry.Before(fi.mtime) || (fi.live && now.Sub(fi.mtime) < growthProbe) {
		return fi.mtime
	}
	return fi.lastEntry
}

// growthProbe is how long a file must not have changed for its entries'
// times, not its own, to say when it was last active: a slow copy (rsync,
// NFS, a sync tool) writes more often than that.
const growthProbe = 2 * time.Second

// readLast feeds, before a quiet file is closed, a last line that has no
// LF but is a whole JSON value: Pi ends every line with one, but a file
// copied or edited by hand may lack it, and replay reads it.
func (f *Follower) readLast(fi *file) {
	if fi.size <= fi.readOff || fi.size-fi.readOff > 64<<20 || fi.lastTried == fi.size {
		return
	}
	fi.lastTried = fi.size
	fh, err := openFile(fi.path)
	if err != nil {
		return
	}
	defer fh.Close()
	b := make([]byte, fi.size-fi.readOff)
	if _, err := fh.ReadAt(b, fi.readOff); err != nil && !errors.Is(err, io.EOF) {
		return
	}
	b = bytes.TrimSuffix(b, []byte{'\r'})
	if bytes.IndexByte(b, '\n') >= 0 || !json.Valid(b) {
		return
	}
	fi.tr.Line(fi.readOff, b)
	fi.readOff = fi.size
	fi.readTail = checksumAt(fh, fi.readOff)
}

// rewritten starts fi again from its start: its bytes were rewritten in
// place (Pi migrates old files so; cp or a shell's > writes another file
// over it). The claims keep what was traced from being traced again, and
// offsets before no longer mean anything. A run the old bytes held open
// is traced, as for a file gone, unless the new bytes hold the same
// session (read again, the run goes on) or another file does.
func (f *Follower) rewritten(fi *file) {
	f.settle(fi)
	if fi.tr != nil && !fi.closed && headerSession(fi.path) != fi.session && !f.sessionFollowed(fi, nil) {
		fi.tr.Close(false)
		f.progress(fi) // its claims commit with the next flush
	}
	f.dropTracer(fi)
	fi.committed, fi.pending, fi.size, fi.tailAt, fi.skip = 0, 0, 0, -1, 0
	fi.lastEntry, fi.lastTried = time.Time{}, 0
	delete(f.uncommitted, fi)
}

// checksumAt is the checksum of the tailLen bytes before off in fh.
func checksumAt(fh *os.File, off int64) uint32 {
	start := max(0, off-tailLen)
	b := make([]byte, off-start)
	if n, err := fh.ReadAt(b, start); err != nil && n < len(b) {
		return 0
	}
	return crc32.ChecksumIEEE(b)
}

// newTracer builds fi's tracer once its first line, which lr reads from
// the start, is whole. A tracer starts at the top of the file; the claims
// skip what was traced.
func (f *Follower) newTracer(fi *file, lr *framing.Reader) bool {
	first, ok := firstLine(lr)
	if !ok {
		return false // not even a whole header yet
	}
	if f.cfg.IsSession != nil && !f.cfg.IsSession(first) {
		fi.notSess = true
		f.logOnce("not "+fi.path, "%s is not a Pi session file (its first line is neither a session header nor an entry); not followed", fi.path)
		return false
	}
	var entry bool
	fi.session, entry = sessionOf(first)
	if entry {
		f.logOnce("nohdr "+fi.path, "%s has no session header: traced by its entries, as replay traces it", fi.path)
	}
	fi.tr = f.cfg.NewTracer(TracerSpec{Path: fi.path, SkipThrough: fi.skip})
	fi.readOff = 0
	return true
}

// readSize is how much of a file one read takes.
const readSize = 64 << 10

// firstLine reads the first complete line with lr, which is at the
// start of a file: its header. oh-my-pi writes a title line before the
// header (a slot it rewrites in place, {"type":"title",…}); its header is
// the line after it.
func firstLine(lr *framing.Reader) ([]byte, bool) {
	line, err := lr.Next()
	if err == nil && lr.Offset() == 0 && bytes.HasPrefix(line, titlePrefix) {
		line, err = lr.Next()
	}
	return line, err == nil
}

// titlePrefix starts oh-my-pi's title line.
var titlePrefix = []byte(`{"type":"title"`)

// progress notes runs the tracer has traced since the last look.
func (f *Follower) progress(fi *file) {
	if fi.tr == nil {
		return
	}
	// A last line read without its LF (readLast) ends past the file.
	if c := min(fi.tr.Committed(), fi.readOff); c > fi.pending {
		fi.pending = c
		f.uncommitted[fi] = true
	}
}

// due runs Idle for a file once it has been quiet for settle, and reports
// whether it is to be closed: quiet for CloseAfter with a run open.
func (f *Follower) due(fi *file, now time.Time) bool {
	if fi.tr == nil || fi.closed {
		return false
	}
	quiet := now.Sub(fi.active(now)) >= f.cfg.CloseAfter
	idle := !fi.nextIdle.IsZero() && !now.Before(fi.nextIdle)
	if quiet || idle {
		f.readLast(fi) // before Idle, which would trace its run without it
	}
	if idle {
		fi.tr.Idle(now, f.cfg.Settle)
		f.progress(fi)
		if fi.tr.Committed() >= fi.readOff {
			fi.nextIdle = time.Time{} // nothing open
		} else {
			fi.nextIdle = now.Add(f.cfg.Settle)
		}
	}
	return quiet && fi.tr.Committed() < fi.readOff && !f.goesOn(fi, now)
}

// goesOn reports whether fi's session goes on in another followed file
// that is not quiet: fi is a copy made mid-run (cp -a into a backup
// folder) while Pi, writing the other, is still in that run. Its open run
// is left to that file, which holds it whole once it ends; closing the
// copy first would claim the run as it stood when copied.
func (f *Follower) goesOn(fi *file, now time.Time) bool {
	return f.sessionFollowed(fi, func(o *file) bool {
		return !o.closed && !o.notSess && o.accept != ignored && now.Sub(o.active(now)) < f.cfg.CloseAfter
	})
}

// closeQuiet traces the open run of a file due says is to be closed.
func (f *Follower) closeQuiet(fi *file) {
	fi.tr.Close(false)
	fi.closed, fi.nextIdle = true, time.Time{}
	f.progress(fi)
}

func (f *Follower) dropTracer(fi *file) {
	fi.tr, fi.readOff, fi.nextIdle, fi.closed, fi.lastTried = nil, 0, time.Time{}, false, 0
}
