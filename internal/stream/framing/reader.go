package framing

import (
	"bytes"
	"errors"
	"io"
)

// maxEmptyReads bounds how often a source may return (0, nil) in a row
// before it is treated as broken rather than slow.
const maxEmptyReads = 100

var errBadRead = errors.New("framing: reader returned an invalid count")

// Reader pulls records from an io.Reader, for files and stdin. It is not
// safe for concurrent use.
type Reader struct {
	src      io.Reader
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
	err    error
	counter
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader, opts ...Option) *Reader {
	c := newConfig(opts)
	return &Reader{src: r, readSize: c.readSize, retain: c.retain, piece: c.piece()}
}

// Next returns the next record, with the LF and one preceding CR stripped.
// The slice is valid until the next call to Next. After the last record
// (the unterminated tail, if any) Next returns io.EOF; a read error other
// than io.EOF is returned the same way, after the records read before it.
func (r *Reader) Next() ([]byte, error) {
	for {
		if i := bytes.IndexByte(r.buf[r.r+r.scanned:r.w], '\n'); i >= 0 {
			end := r.r + r.scanned + i
			b := r.buf[r.r:end]
			r.r, r.scanned = end+1, 0
			if !r.parts.empty() {
				b = r.joined(b)
			}
			if rec, ok := r.line(b); ok {
				return rec, nil
			}
			continue
		}
		r.scanned = r.w - r.r
		if r.err != nil {
			if r.w > r.r || !r.parts.empty() {
				b := r.buf[r.r:r.w]
				if !r.parts.empty() {
					b = r.parts.whole(b)
				}
				r.r, r.scanned = r.w, 0
				if rec, ok := r.line(b); ok {
					return rec, nil
				}
			}
			return nil, r.err
		}
		r.fill()
	}
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

// Stats reports what the Reader has seen so far.
func (r *Reader) Stats() Stats { return r.stats }

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
	if r.w == len(r.buf) {
		// buf holds the start of one record and nothing else (Next reads
		// more only when buf[r:w] has no LF). Keep it as a piece and read
		// on into a new buffer as large as all the pieces (at least one
		// read, at most r.piece): nothing is copied until the record ends.
		r.parts.add(r.buf[r.r:r.w])
		r.buf = make([]byte, min(r.piece, max(r.readSize, r.parts.n)))
		r.r, r.w, r.scanned = 0, 0, 0
	}
	for range maxEmptyReads {
		m, err := r.src.Read(r.buf[r.w:])
		if m < 0 || m > len(r.buf)-r.w {
			r.err = errBadRead
			return
		}
		r.w += m
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
