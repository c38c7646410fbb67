package framing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
)

// maxEmptyReads bounds how often a source may return (0, nil) in a row
// before it is treated as broken rather than slow.
const maxEmptyReads = 100

var errBadRead = errors.New("framing: reader returned an invalid count")

// TooLongError is what [Reader.Next] returns for a line longer than the
// bound of [WithMaxRecord]. It ends nothing: the next call goes on after
// that line.
type TooLongError struct {
	// Line is the line's number in the input, from 1, empty lines
	// included.
	Line int64
	// Max is the bound, in bytes.
	Max int
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("line %d is longer than %d bytes", e.Line, e.Max)
}

// Reader pulls records from an io.Reader, for files and stdin, or tails
// a file being written ([NewReaderAt]). It is not safe for concurrent use.
type Reader struct {
	src      io.Reader
	ra       io.ReaderAt // set: a tail, read from pos on (NewReaderAt)
	pos      int64       // the input offset of buf[w]
	readSize int
	retain   int
	piece    int // the largest buffer a long record is read into
	buf      []byte
	r, w     int // unread bytes are buf[r:w]
	scanned  int // leading bytes of buf[r:w] already known to hold no LF
	// parts holds the start of a record that filled buf; buf[r:w] then
	// continues it.
	parts pieces
	// pieced says buf is the last piece of a record longer than retain,
	// to be released once that record is gone.
	pieced bool
	// max bounds a record (0: no bound); skipping says the rest of a line
	// over it is being read past, up to its LF.
	max      int
	skipping bool
	err      error
	// lineEnd is the input offset past the last line ended (read,
	// skipped or empty); at, where the record Next returned last begins.
	lineEnd, at int64
	counter
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader, opts ...Option) *Reader {
	c := newConfig(opts)
	return &Reader{src: r, readSize: c.readSize, retain: c.retain, piece: c.piece(), max: c.maxRecord}
}

// NewReaderAt returns a Reader that tails src, a file still being
// written, from offset off on. Unlike NewReader's, it hands out only
// whole lines: one without its LF yet is left for a later read (Next
// returns io.EOF, and End is where it begins). Empty lines are records,
// so that the lines' Offset and End cover the input. And a line longer
// than the buffer is read into one buffer of its exact length, found by
// looking ahead in src for its LF, not in pieces copied together at its
// end: an 80 MB line costs 80 MB, not twice that.
func NewReaderAt(src io.ReaderAt, off int64, opts ...Option) *Reader {
	r := NewReader(nil, opts...)
	r.ResetAt(src, off)
	return r
}

// ResetAt makes a Reader made by NewReaderAt tail src from off on, with
// the buffer it has, unless a long line grew that past [WithRetain].
func (r *Reader) ResetAt(src io.ReaderAt, off int64) {
	if len(r.buf) > r.retain {
		r.buf = nil
	}
	r.ra, r.pos, r.lineEnd, r.at = src, off, off, off
	r.r, r.w, r.scanned, r.err = 0, 0, 0, nil
}

// Rewind makes a Reader made by NewReaderAt go on from off: from the bytes
// it holds when off is among them (a header read, then the lines from
// the top), else from its source.
func (r *Reader) Rewind(off int64) {
	if start := r.pos - int64(r.w); off >= start && off <= r.pos {
		r.r, r.scanned, r.err, r.lineEnd = int(off-start), 0, nil, off
		return
	}
	r.ResetAt(r.ra, off)
}

// Next returns the next record, with the LF and one preceding CR stripped.
// The slice is valid until the next call to Next. After the last record
// (the unterminated tail, if any, but for a tail's) Next returns io.EOF;
// a read error other than io.EOF is returned the same way, after the
// records read before it. A line over the bound of [WithMaxRecord] is a
// [*TooLongError], after which Next may be called again.
func (r *Reader) Next() ([]byte, error) {
	for {
		if r.skipping {
			i := bytes.IndexByte(r.buf[r.r:r.w], '\n')
			if i < 0 {
				r.r = r.w
				if r.err != nil {
					return nil, r.err
				}
				r.fill()
				continue
			}
			r.r, r.skipping = r.r+i+1, false
			r.ended()
		}
		if i := bytes.IndexByte(r.buf[r.r+r.scanned:r.w], '\n'); i >= 0 {
			end := r.r + r.scanned + i
			b := r.buf[r.r:end]
			r.r, r.scanned = end+1, 0
			start := r.lineEnd
			r.ended()
			if r.overMax(b) {
				r.parts.reset()
				return nil, r.tooLong()
			}
			if !r.parts.empty() {
				b = r.joined(b)
			}
			if rec, ok := r.line(b); ok || r.ra != nil {
				r.at = start
				return rec, nil
			}
			continue
		}
		r.scanned = r.w - r.r
		if r.err == nil && r.overMax(r.buf[r.r:r.w]) {
			// Whatever comes, this line is too long: drop it now, and
			// read past the rest holding nothing.
			r.parts.reset()
			r.r, r.scanned, r.skipping, r.pieced = r.w, 0, true, true
			return nil, r.tooLong()
		}
		if r.err != nil {
			if r.ra == nil && (r.w > r.r || !r.parts.empty()) {
				b := r.buf[r.r:r.w]
				r.r, r.scanned = r.w, 0
				start := r.lineEnd
				r.ended()
				if r.overMax(b) {
					r.parts.reset()
					return nil, r.tooLong()
				}
				if !r.parts.empty() {
					b = r.parts.whole(b)
				}
				if rec, ok := r.line(b); ok {
					r.at = start
					return rec, nil
				}
			}
			return nil, r.err
		}
		r.fill()
	}
}

// Offset is the input offset where the line of the record Next returned
// last begins: lines skipped, empty or too long, and the CRs stripped
// count, so it is the record's place in the input (a session file's
// version 1 entries take their ids from it).
func (r *Reader) Offset() int64 { return r.at }

// End is the input offset past the last line ended: after a record, past
// its LF; after io.EOF from a tail, where the line without LF begins.
func (r *Reader) End() int64 { return r.lineEnd }

// ended notes that a line ended where buf[r:] begins.
func (r *Reader) ended() { r.lineEnd = r.pos - int64(r.w-r.r) }

// overMax reports whether the line made of the pieces and tail, which
// ends at an LF, at the end of the input, or is still going on, is longer
// than max once its one trailing CR is stripped.
func (r *Reader) overMax(tail []byte) bool {
	if r.max <= 0 {
		return false
	}
	n := r.parts.n + len(tail)
	if n != r.max+1 {
		return n > r.max+1
	}
	last := byte(0)
	if len(tail) > 0 {
		last = tail[len(tail)-1]
	} else if k := len(r.parts.list); k > 0 {
		q := r.parts.list[k-1]
		last = q[len(q)-1]
	}
	return last != '\r'
}

// tooLong counts a line skipped for its length.
func (r *Reader) tooLong() error {
	r.stats.TooLong++
	return &TooLongError{Line: r.stats.Records + r.stats.EmptyLines + r.stats.TooLong, Max: r.max}
}

// joined returns the record made of the pieces and tail, the start of buf
// up to its LF; r.r is already past the LF. A record up to retain bytes is
// copied together with the rest of buf into one new buffer, which becomes
// buf: the next records of its size then fit without allocating. A longer
// one gets a buffer of its exact size; buf is released later.
func (r *Reader) joined(tail []byte) []byte {
	size := r.parts.n + len(tail)
	if size > r.retain {
		r.pieced = true
		return r.parts.whole(tail)
	}
	nb := make([]byte, r.parts.n+r.w+r.readSize)
	k := 0
	for _, q := range r.parts.list {
		k += copy(nb[k:], q)
	}
	copy(nb[k:], r.buf[:r.w])
	r.parts.reset()
	r.buf, r.r, r.w = nb, k+r.r, k+r.w
	return nb[:size]
}

// fill makes room in buf and reads once from src.
func (r *Reader) fill() {
	n := r.w - r.r
	switch {
	case (len(r.buf) > r.retain || r.pieced) && r.parts.empty() && n+r.readSize <= len(r.buf)/2:
		// The buffer grew for a huge record that is gone now: release it.
		// (While parts holds a record, buf continues it and is kept.)
		nb := make([]byte, max(r.readSize, n+r.readSize))
		copy(nb, r.buf[r.r:r.w])
		r.buf, r.r, r.w, r.pieced = nb, 0, n, false
	case r.r > 0 && (r.w == len(r.buf) || r.r > len(r.buf)/2):
		copy(r.buf, r.buf[r.r:r.w])
		r.r, r.w = 0, n
	}
	if r.w == len(r.buf) && r.ra != nil && r.w > 0 {
		if !r.grow() {
			r.err = io.EOF // a line still being written: read it whole later
			return
		}
	} else if r.w == len(r.buf) {
		// buf holds the start of one record and nothing else (Next reads
		// more only when buf[r:w] has no LF). Keep it as a piece and read
		// on into a new buffer as large as all the pieces (at least one
		// read, at most r.piece): nothing is copied until the record ends.
		r.parts.add(r.buf[r.r:r.w])
		r.buf = make([]byte, min(r.piece, max(r.readSize, r.parts.n)))
		r.r, r.w, r.scanned = 0, 0, 0
	}
	for range maxEmptyReads {
		var m int
		var err error
		if r.ra != nil {
			m, err = r.ra.ReadAt(r.buf[r.w:], r.pos)
		} else {
			m, err = r.src.Read(r.buf[r.w:])
		}
		if m < 0 || m > len(r.buf)-r.w {
			r.err = errBadRead
			return
		}
		r.w += m
		r.pos += int64(m)
		r.stats.Bytes += int64(m)
		if err != nil {
			r.err = err
			return
		}
		if m > 0 {
			return
		}
	}
	r.err = io.ErrNoProgress
}

// grow replaces buf, which one line without LF fills, with a buffer of
// the line's exact length up to its LF, found ahead in ra: doubling until
// it fit cost three times the line (the old buffer, the new one and the
// garbage of the steps before). It reports false while the line has no
// LF.
func (r *Reader) grow() bool {
	scratch := make([]byte, 64<<10)
	for pos := r.pos; ; {
		n, err := r.ra.ReadAt(scratch, pos)
		if i := bytes.IndexByte(scratch[:n], '\n'); i >= 0 {
			size := r.w - r.r + int(pos-r.pos) + i + 1
			if size > 16<<20 {
				// The buffer of an earlier long line may still be garbage:
				// freed first, the peak is one line, not two.
				runtime.GC()
			}
			nb := make([]byte, size)
			r.w = copy(nb, r.buf[r.r:r.w])
			r.buf, r.r = nb, 0
			return true
		}
		pos += int64(n)
		if err != nil || n == 0 {
			return false
		}
	}
}
