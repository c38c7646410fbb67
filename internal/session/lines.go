package session

import (
	"bytes"
	"slices"

	"github.com/pi-otel/pi-otel/internal/event"
)

// decodedLine is one line, decoded, for feed.
type decodedLine struct {
	off, end int64
	blank    bool
	hdr      *event.Header // the line is a header, and the first non-blank one
	e        *entry
	err      error
	// pieces, when set, are the entries (and the damaged bytes between
	// them) of a line that held several: e, hdr and err are unset.
	pieces []decodedLine
	piece  bool // one of a line's pieces
}

// line decodes one line; header says it is the first non-blank line, to
// be read as the file's header if it is one.
func (d *decoder) line(off int64, b []byte, header bool) decodedLine {
	l := decodedLine{off: off, end: off + int64(len(b)) + 1}
	b = bytes.TrimRight(b, "\r")
	if len(bytes.TrimSpace(b)) == 0 || header && isTitle(b) {
		// Blank, or oh-my-pi's title line before the header: the header
		// is still to come.
		l.blank = true
		return l
	}
	d.record(&l, b, header)
	if l.err != errDamaged {
		return l
	}
	// Pi's writes can meet on a line: read each entry of it.
	pieces := event.SplitLine(b)
	if pieces == nil {
		return l
	}
	l.err, l.pieces = nil, make([]decodedLine, len(pieces))
	for i, p := range pieces {
		piece := b[p.Start:p.End]
		// Each its own place in the file: version 1 ids and a restart's
		// offsets tell them apart. The last one ends with the line.
		pl := &l.pieces[i]
		pl.off, pl.end, pl.piece = off+int64(p.Start), off+int64(p.End), true
		if i == len(pieces)-1 {
			pl.end = l.end
		}
		switch {
		case !p.Value:
			pl.err = errDamaged
		case header && isTitle(piece):
			pl.blank = true // the header may come next
		default:
			d.record(pl, piece, header)
			header = false
		}
	}
	if !slices.ContainsFunc(l.pieces, func(p decodedLine) bool { return p.err == nil && !p.blank }) {
		// Taken apart, it holds no record either ({}0): one damaged line,
		// as before, not a repair.
		l.err, l.pieces = errDamaged, nil
	}
	return l
}

// record decodes one record of a line into l.
func (d *decoder) record(l *decodedLine, b []byte, header bool) {
	if header {
		if h := event.ReadHeader(b); h.IsSession() {
			l.hdr = &h
			d.from.Cwd = h.Cwd
			return
		}
	}
	l.e, l.err = d.decode(b)
}
