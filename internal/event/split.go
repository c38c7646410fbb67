package event

import (
	"bytes"
	"unicode/utf8"
)

// A Piece is a part of a line that SplitLine took apart: a JSON object, or
// bytes that start none (a value cut short, garbage), from Start to End.
type Piece struct {
	Start, End int
	Value      bool
}

// splitBudget bounds the bytes SplitLine reads per byte of the line, past
// a floor: a hostile line of unclosed objects would otherwise be read
// again from each of its braces.
const (
	splitBudget = 8
	splitFloor  = 1 << 16
)

// SplitLine takes apart a line that did not decode as one record: Pi's
// writes can meet on one line, two records with no LF between them,
// perhaps with bytes between that are none (a write cut short, padding).
// It reads the JSON objects one after another, as encoding/json's Decoder
// reads values written back to back; where no object can be read, the
// bytes up to the next '{' are a piece of their own. An object that
// begins inside a broken one is part of it (an object nested in the cut
// value, such as a content block) unless it runs past where that one
// broke: only then is it a record written after the cut.
//
// Its result is nil when taking the line apart recovers nothing: it holds
// no whole object, or is one object and nothing else (what is wrong is
// inside it), or it is too contrived to read in a few passes. Pieces are
// in line order; whitespace between them is in none.
//
// It is only called on a line that failed to decode, so a good line
// costs nothing.
func SplitLine(line []byte) []Piece {
	return splitLine(line, splitBudget*len(line)+splitFloor)
}

func splitLine(line []byte, budget int) []Piece {
	// The scanner checks strings as UTF-8 and the Decoder does not, so it
	// reads a copy with every byte above 0x7F made '#': a plain character
	// inside a string and, like those bytes, no JSON outside one. A line
	// with none (a base64 image, the usual huge line) is read as it is:
	// under watch's memory bound a torn 80 MB line has no room for a copy.
	var plain []byte
	for k, c := range line {
		if c >= utf8.RuneSelf {
			if plain == nil {
				plain = bytes.Clone(line)
			}
			plain[k] = '#'
		}
	}
	if plain == nil {
		plain = line
	}
	var s scan
	var out []Piece
	values := 0
	garbage := -1 // start of the pending garbage piece
	broken := -1  // the furthest point where a read in the garbage failed
	lastEnd := 0  // end of the last non-space byte of the pending garbage
	i := 0
	for {
		i = skipSpace(line, i)
		if i >= len(line) {
			break
		}
		if line[i] == '{' {
			// The object ends at i+n, or breaks at the byte there,
			// which was read too.
			n, err := s.walk(plain[i:])
			budget -= n
			if err != nil {
				budget--
			}
			if budget < 0 {
				return nil
			}
			if err != nil {
				broken = max(broken, i+n)
			} else if end := i + n; end > broken {
				if garbage >= 0 {
					out = append(out, Piece{Start: garbage, End: lastEnd})
					garbage = -1
				}
				out = append(out, Piece{Start: i, End: end, Value: true})
				values++
				broken, i = -1, end
				continue
			}
		}
		if garbage < 0 {
			garbage = i
		}
		next := len(line)
		if j := bytes.IndexByte(line[i+1:], '{'); j >= 0 {
			next = i + 1 + j
		}
		lastEnd = next
		for lastEnd > i && isSpace(line[lastEnd-1]) {
			lastEnd--
		}
		i = next
	}
	if garbage >= 0 {
		out = append(out, Piece{Start: garbage, End: lastEnd})
	}
	if values == 0 || values == 1 && len(out) == 1 {
		return nil
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
