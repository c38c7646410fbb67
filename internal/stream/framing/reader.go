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
	buf      []byte
	r, w     int // unread bytes are buf[r:w]
	scanned  int // leading bytes of buf[r:w] already known to hold no LF
	err      error
	counter
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader, opts ...Option) *Reader {
	c := newConfig(opts)
	return &Reader{src: r, readSize: c.readSize, retain: c.retain}
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
			if rec, ok := r.line(b); ok {
				return rec, nil
			}
			continue
		}
		r.scanned = r.w - r.r
		if r.err != nil {
			if r.w > r.r {
				b := r.buf[r.r:r.w]
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

// Stats reports what the Reader has seen so far.
func (r *Reader) Stats() Stats { return r.stats }

// fill makes room in buf and reads once from src.
func (r *Reader) fill() {
	n := r.w - r.r
	switch {
	case len(r.buf) > r.retain && n+r.readSize <= len(r.buf)/2:
		// The buffer grew for a huge record that is gone now: release it.
		nb := make([]byte, max(r.readSize, n+r.readSize))
		copy(nb, r.buf[r.r:r.w])
		r.buf, r.r, r.w = nb, 0, n
	case r.r > 0 && (r.w == len(r.buf) || r.r > len(r.buf)/2):
		copy(r.buf, r.buf[r.r:r.w])
		r.r, r.w = 0, n
	}
	if r.w == len(r.buf) {
		// One record fills the buffer. Grow by half (at least one read):
		// the old and new buffers together stay within 2.5x the record.
		nb := make([]byte, len(r.buf)+max(r.readSize, len(r.buf)/2))
		copy(nb, r.buf[r.r:r.w])
		r.buf, r.r, r.w = nb, 0, n
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
