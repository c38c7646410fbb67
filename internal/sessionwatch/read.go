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
	buf   *[]byte
	// have is how many bytes from readOff on buf holds already.
	have int
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
	r := &aRead{fi: fi, fh: fh}
	if fi.tr == nil {
		// The header is read into the buffer the lines are read into,
		// and what came with it is not read again: fh is at r.have.
		r.buf = f.buffer()
		if len(*r.buf) == 0 {
			*r.buf = make([]byte, readSize)
		}
		ok := false
		if r.have, ok = f.newTracer(fi, fh, r.buf); !ok {
			f.putBuffer(r.buf)
			fh.Close()
			return nil
		}
	} else if _, err := fh.Seek(fi.readOff, io.SeekStart); err != nil {
		fh.Close()
		return nil
	}
	if p, ok := fi.tr.(Predecoder); ok {
		// Its own buffer: the file before may still be read into another.
		if r.buf == nil {
			r.buf = f.buffer()
		}
		decode, from, have := p.Predecode(), fi.readOff, r.have
		r.ahead = readahead.Start(func(emit func(func(), int)) {
			f.readLines(fh, from, r.buf, have, func(off int64, line []byte, n int) { emit(decode(off, line), n) })
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
		f.putBuffer(r.buf)
		if fi.tr == nil {
			return // the file was let go while it was read (settle)
		}
	} else {
		buf := &f.buf
		if r.buf != nil {
			buf = r.buf // it holds the header
			defer f.putBuffer(buf)
		}
		f.readLines(fh, fi.readOff, buf, r.have, func(off int64, line []byte, n int) {
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

// buffer is a read buffer of its own for a read ahead; endRead keeps it
// for the next.
func (f *Follower) buffer() *[]byte {
	if n := len(f.bufs); n > 0 {
		b := f.bufs[n-1]
		f.bufs = f.bufs[:n-1]
		return b
	}
	return new([]byte)
}

// putBuffer keeps a read ahead's buffer for the next; not one a huge
// first line grew (readLines lets go of those too).
func (f *Follower) putBuffer(b *[]byte) {
	if len(*b) > 1<<20 {
		*b = nil
	}
	f.bufs = append(f.bufs, b)
}

// readLines calls line with each complete line of fh from off on, and
// the line's length with its LF; line is only valid during the call. It
// stops at a line still being written. *buf is the buffer it reads into,
// grown for a long line; a huge line's is not kept. Its first have bytes
// are the file's from off on, read already: fh is at off+have.
func (f *Follower) readLines(fh *os.File, off int64, buf *[]byte, have int, line func(off int64, b []byte, n int)) {
	defer func() {
		if len(*buf) > 1<<20 {
			*buf = nil // a huge line (an image) is not kept for the next read
		}
	}()
	if *buf == nil {
		*buf = make([]byte, readSize)
	}
	pre := have > 0 // split first, as if just read
	for {
		if f.ctx != nil && f.ctx.Err() != nil && !f.final {
			return // a signal: the rest is read at the next start
		}
		var n int
		var err error
		if pre {
			pre, n = false, have
		} else {
			if have == len(*buf) { // one line longer than the buffer
				if *buf = lineBuffer(fh, off, *buf); *buf == nil {
					return // a line still being written: read it whole later
				}
			}
			n, err = fh.Read((*buf)[have:])
			have += n
		}
		b := *buf
		start := 0
		for {
			i := bytes.IndexByte(b[start:have], '\n')
			if i < 0 {
				break
			}
			line(off, bytes.TrimSuffix(b[start:start+i], []byte{'\r'}), i+1)
			off += int64(i + 1)
			start += i + 1
		}
		have = copy(b, b[start:have])
		if len(b) > 1<<20 && have <= readSize {
			// A long line is read: back to a small buffer, so that the
			// next long line is not read into this one and copied out of
			// it with both alive (two 200 MB lines took 400 MB).
			small := make([]byte, readSize)
			copy(small, b[:have])
			*buf = small
		}
		if err != nil || n == 0 {
			return // the rest, if any, is a line still being written
		}
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

// newTracer builds fi's tracer once its first line is whole. A tracer
// starts at the top of the file; the claims skip what was traced. fh is
// at the start, and the first line is read into *buf; it returns how many
// bytes *buf holds.
func (f *Follower) newTracer(fi *file, fh *os.File, buf *[]byte) (int, bool) {
	first, have, ok := firstLine(fh, buf)
	if !ok {
		return 0, false // not even a whole header yet
	}
	if f.cfg.IsSession != nil && !f.cfg.IsSession(first) {
		fi.notSess = true
		f.logOnce("not "+fi.path, "%s is not a Pi session file (its first line is neither a session header nor an entry); not followed", fi.path)
		return 0, false
	}
	var entry bool
	fi.session, entry = sessionOf(first)
	if entry {
		f.logOnce("nohdr "+fi.path, "%s has no session header: traced by its entries, as replay traces it", fi.path)
	}
	fi.tr = f.cfg.NewTracer(TracerSpec{Path: fi.path, SkipThrough: fi.skip})
	fi.readOff = 0
	return have, true
}

// readSize is how much of a file one read takes.
const readSize = 64 << 10

// firstLine reads the first complete line of fh, which is at its start:
// its header. oh-my-pi writes a title line before the header (a slot it
// rewrites in place, {"type":"title",…}); its header is the line after
// it. It reads into *buf (4 KiB if it has no room), grown for a long
// line, and returns the line, in *buf, and how many bytes *buf holds.
// A line still being written leaves *buf nil.
func firstLine(fh *os.File, buf *[]byte) (line []byte, have int, ok bool) {
	if len(*buf) == 0 {
		*buf = make([]byte, 4096)
	}
	start, scanned := 0, 0 // the line's start; where the search for its LF goes on
	for {
		if have == len(*buf) {
			// Room for all up to the next LF, at once (lineBuffer).
			if *buf = lineBuffer(fh, 0, *buf); *buf == nil {
				return nil, have, false
			}
		}
		b := *buf
		n, err := fh.Read(b[have:])
		have += n
		for {
			i := bytes.IndexByte(b[scanned:have], '\n')
			if i < 0 {
				scanned = have
				break
			}
			end := scanned + i
			line := bytes.TrimSuffix(b[start:end], []byte{'\r'})
			scanned = end + 1
			if start == 0 && bytes.HasPrefix(line, titlePrefix) {
				start = end + 1
				continue
			}
			return line, have, true
		}
		if err != nil || n == 0 {
			return nil, have, false
		}
	}
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
