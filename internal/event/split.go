package event

import "bytes"

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
			end, fail := objectEnd(line, i)
			if end >= 0 {
				budget -= end - i
			} else {
				budget -= fail - i + 1
			}
			if budget < 0 {
				return nil
			}
			if end > broken {
				if garbage >= 0 {
					out = append(out, Piece{Start: garbage, End: lastEnd})
					garbage = -1
				}
				out = append(out, Piece{Start: i, End: end, Value: true})
				values++
				broken, i = -1, end
				continue
			}
			if end < 0 {
				broken = max(broken, fail)
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

// objectEnd reads the JSON object that begins at b[i] and returns the
// index after it, or -1 and the index of the byte where it stops being
// JSON (len(b) when it is cut short), as encoding/json's scanner finds
// it. Bytes of strings are not checked as UTF-8: the Decoder does not;
// a piece's decoding does.
func objectEnd(b []byte, i int) (end, fail int) {
	// Container kinds, innermost last: true for an object.
	var stack []bool
	push := func(obj bool) bool {
		if len(stack) >= maxDepth {
			return false
		}
		stack = append(stack, obj)
		return true
	}
	n := len(b)
	// b[i] is '{'.
	push(true)
	i++
	// Each state reads from b[i]: a key (or the close of an empty
	// object), a value (or the close of an empty array), or what follows
	// a value.
	const (
		firstKey = iota
		key
		firstValue
		value
		after
	)
	state := firstKey
	for {
		i = skipSpace(b, i)
		if i >= n {
			return -1, n
		}
		c := b[i]
		switch state {
		case firstKey, key:
			if c == '}' && state == firstKey {
				i++
				stack = stack[:len(stack)-1]
				state = after
				break
			}
			if c != '"' {
				return -1, i
			}
			j, f := stringEnd(b, i+1)
			if j < 0 {
				return -1, f
			}
			i = skipSpace(b, j)
			if i >= n {
				return -1, n
			}
			if b[i] != ':' {
				return -1, i
			}
			i++
			state = value
		case firstValue, value:
			switch {
			case c == ']' && state == firstValue:
				i++
				stack = stack[:len(stack)-1]
				state = after
			case c == '{' || c == '[':
				if !push(c == '{') {
					return -1, i
				}
				i++
				state = firstKey
				if c == '[' {
					state = firstValue
				}
			case c == '"':
				j, f := stringEnd(b, i+1)
				if j < 0 {
					return -1, f
				}
				i, state = j, after
			case c == 't' || c == 'f' || c == 'n':
				lit := "null"
				if c == 't' {
					lit = "true"
				} else if c == 'f' {
					lit = "false"
				}
				for k := 1; k < len(lit); k++ {
					if i+k >= n {
						return -1, n
					}
					if b[i+k] != lit[k] {
						return -1, i + k
					}
				}
				i, state = i+len(lit), after
			default:
				j, f := numberEnd(b, i)
				if j < 0 {
					return -1, f
				}
				i, state = j, after
			}
		case after:
			if len(stack) == 0 {
				return i, 0
			}
			switch {
			case c == ',':
				i++
				state = value
				if stack[len(stack)-1] {
					state = key
				}
			case c == '}' && stack[len(stack)-1], c == ']' && !stack[len(stack)-1]:
				i++
				stack = stack[:len(stack)-1]
			default:
				return -1, i
			}
		}
		if state == after && len(stack) == 0 {
			return i, 0
		}
	}
}

// stringEnd reads the string whose opening quote is at b[i-1], as
// objectEnd reads values.
func stringEnd(b []byte, i int) (end, fail int) {
	for {
		j := bytes.IndexAny(b[i:], "\"\\")
		// Control characters before the quote or backslash end it.
		stop := len(b)
		if j >= 0 {
			stop = i + j
		}
		for k := i; k < stop; k++ {
			if b[k] < 0x20 {
				return -1, k
			}
		}
		if j < 0 {
			return -1, len(b)
		}
		i = stop
		if b[i] == '"' {
			return i + 1, 0
		}
		i++ // past the backslash
		if i >= len(b) {
			return -1, len(b)
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			for k := 1; k <= 4; k++ {
				if i+k >= len(b) {
					return -1, len(b)
				}
				if !isHex(b[i+k]) {
					return -1, i + k
				}
			}
			i += 5
		default:
			return -1, i
		}
	}
}

// numberEnd reads the number at b[i], as objectEnd reads values.
func numberEnd(b []byte, i int) (end, fail int) {
	digits := func() {
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	// need is one digit where the grammar wants it.
	need := func() bool {
		return i < len(b) && isDigit(b[i])
	}
	if b[i] == '-' {
		i++
		if i >= len(b) {
			return -1, len(b)
		}
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		digits()
	default:
		return -1, i
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !need() {
			return -1, min(i, len(b))
		}
		digits()
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !need() {
			return -1, min(i, len(b))
		}
		digits()
	}
	return i, 0
}
