package framing

import "bytes"

// Stats counts what went through a [Splitter], a [Reader] or [Forward].
type Stats struct {
	// Bytes is the number of input bytes consumed (for Forward: read from
	// src, whether or not they reached dst).
	Bytes int64
	// Records is the number of records handed out.
	Records int64
	// EmptyLines is the number of lines that were empty after stripping
	// the CR, and so were not handed out.
	EmptyLines int64
	// LargestRecord is the length of the largest record handed out.
	LargestRecord int
	// TooLong is the number of lines skipped for being longer than
	// [WithMaxRecord]'s bound (Reader only).
	TooLong int64
	// DstErr is the first error writing to dst (Forward only).
	DstErr error
}

// counter applies the line rules shared by Splitter and Reader.
type counter struct {
	stats Stats
}

// line strips one trailing CR and counts the line; ok is false for an empty
// line, which is not a record.
func (c *counter) line(b []byte) (rec []byte, ok bool) {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	if len(b) == 0 {
		c.stats.EmptyLines++
		return nil, false
	}
	c.stats.Records++
	c.stats.LargestRecord = max(c.stats.LargestRecord, len(b))
	return b, true
}

// Splitter turns pushed chunks into records. It is not safe for concurrent
// use, and emit must not call back into the Splitter.
type Splitter struct {
	emit   func(record []byte)
	retain int
	first  int // the first piece's size; the next ones double
	piece  int // the largest piece's size
	// carry holds the start of a record whose LF has not arrived yet; when
	// it fills up, it joins parts and the record goes on in a new one. The
	// record is copied once, when its LF arrives, into a buffer of its size
	// that becomes the carry, kept for reuse up to retain bytes.
	carry []byte
	parts pieces
	counter
}

// NewSplitter returns a Splitter that calls emit for each record. A nil emit
// only counts records.
func NewSplitter(emit func(record []byte), opts ...Option) *Splitter {
	c := newConfig(opts)
	return &Splitter{emit: emit, retain: c.retain, first: firstPiece, piece: c.piece()}
}

// Write splits p and calls emit for every record it completes, with the LF
// and one preceding CR stripped. The record slice is only valid during the
// emit call, except that a record lying whole in p is a slice of p itself,
// valid as long as p is. Write always consumes all of p and never returns
// an error.
func (s *Splitter) Write(p []byte) (int, error) {
	n := len(p)
	s.stats.Bytes += int64(n)
	if len(s.carry) > 0 || !s.parts.empty() {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.keep(p)
			return n, nil
		}
		s.deliver(s.pending(p[:i]))
		s.resetCarry()
		p = p[i+1:]
	}
	// Records that lie inside p are emitted straight from p: no copy.
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		s.deliver(p[:i])
		p = p[i+1:]
	}
	if len(p) > 0 {
		s.keep(p)
	}
	return n, nil
}

// keep adds p to the record whose LF has not arrived yet. A full carry is
// kept as a piece, and p goes on into a new one as large as all the pieces
// (at least s.first, at most s.piece): nothing is copied twice.
func (s *Splitter) keep(p []byte) {
	for len(p) > 0 {
		if len(s.carry) == cap(s.carry) {
			s.parts.add(s.carry)
			s.carry = make([]byte, 0, min(s.piece, max(s.first, s.parts.n)))
		}
		k := copy(s.carry[len(s.carry):cap(s.carry)], p)
		s.carry = s.carry[:len(s.carry)+k]
		p = p[k:]
	}
}

// pending completes the record whose LF has not arrived yet with tail.
func (s *Splitter) pending(tail []byte) []byte {
	if s.parts.empty() && len(s.carry)+len(tail) <= cap(s.carry) {
		s.carry = append(s.carry, tail...)
		return s.carry
	}
	// One copy into a buffer of the record's size, which is the carry of
	// the records after it unless it is larger than retain.
	s.carry = s.parts.whole(s.carry, tail)
	return s.carry
}

// Flush emits the unterminated tail, if any, as a record. The Splitter can
// be written to again afterwards.
func (s *Splitter) Flush() {
	if len(s.carry) > 0 || !s.parts.empty() {
		s.deliver(s.pending(nil))
		s.resetCarry()
	}
}

// Stats reports what the Splitter has seen so far.
func (s *Splitter) Stats() Stats { return s.stats }

func (s *Splitter) deliver(b []byte) {
	if rec, ok := s.line(b); ok && s.emit != nil {
		s.emit(rec)
	}
}

// resetCarry keeps the carry buffer for reuse unless one record made it grow
// past the retain limit.
func (s *Splitter) resetCarry() {
	if cap(s.carry) > s.retain {
		s.carry = nil
		return
	}
	s.carry = s.carry[:0]
}
