package event

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit: json.Valid rejects a record
// that opens more than this many objects and arrays at once.
const maxDepth = 10000

// maxMembers bounds the top-level members a scan records. Pi's records
// have about a dozen at most; a record with more is decoded the slow way.
const maxMembers = 32

// member is one top-level key and its value, as offsets into the record.
// The key excludes its quotes; the value is the whole JSON value.
type member struct {
	keyStart, keyEnd int
	valStart, valEnd int
}

// scan is what one pass over a record learns: whether it is valid, and
// where its top-level members are.
type scan struct {
	object   bool // the top-level value is an object
	members  [maxMembers]member
	n        int
	overflow bool // more than maxMembers members: n is not all of them

	// With caching on (a Decoder's scan), repeats remembers the last
	// object or array value of each of the first top-level members. Pi
	// repeats the same usage object in every message_update of a message;
	// a value that equals the remembered bytes is valid without a second
	// look, since a JSON object or array ends where its text ends.
	caching bool
	repeats [cachedMembers][]byte

	// The members of the top-level "assistantMessageEvent" and "message"
	// objects, found on the way, so that decoding a record need not walk
	// them again.
	ame, msg sub
}

// sub is the members of the object value of one top-level member.
type sub struct {
	at    int // the top-level member's index; -1: none
	m     [maxSub]member
	n     int
	valid bool // at >= 0, the value was an object, walked, and all its members fit
}

// maxSub bounds the members of a sub recorded: a Message has 23 fields,
// and Pi writes about a dozen.
const maxSub = 24

func (u *sub) reset(at int) { u.at, u.n, u.valid = at, 0, false }

// cachedMembers is how many leading members the scan remembers values of;
// cacheMin and cacheMax bound the values worth remembering.
const (
	cachedMembers = 4
	cacheMin      = 64
	cacheMax      = 4096
)

// validate checks rec exactly as utf8.Valid and json.Valid together do,
// in one pass, and records the top-level members. It returns nil,
// ErrInvalidUTF8 or ErrInvalidJSON; invalid UTF-8 wins over malformed JSON,
// as it did when the two checks ran in that order.
func (s *scan) validate(rec []byte) error {
	end, err := s.walk(rec)
	if err == nil && space(rec, end) != len(rec) {
		err = errJSON
	}
	if err == errJSON && !utf8.Valid(rec) {
		return ErrInvalidUTF8
	}
	return err
}

// Sentinels inside the scanner; validate maps them to the exported errors.
var (
	errJSON = ErrInvalidJSON
	errUTF8 = ErrInvalidUTF8
)

// walk is an iterative JSON parser. It reads the value that begins b, as
// encoding/json's Decoder reads one of values written back to back, and
// returns the index after it; with an error, the index is of the byte
// where b stops being JSON (len(b) when it is cut short). Containers are
// tracked as a stack of bits (1 for object); the first 64 levels live in
// a register, deeper ones in a slice that only pathological records ever
// need.
func (s *scan) walk(b []byte) (int, error) {
	var (
		i      int
		depth  int
		inObj  bool     // the innermost open container is an object
		low    uint64   // container kinds for depths 1..64
		high   []uint64 // and beyond
		cur    = -1     // index of the top-level member whose value is being read
		reused bool     // that value matched the remembered one
		inSub  *sub     // the sub whose object's own members are being read
		subCur = -1     // index in inSub.m of the member whose value is being read
		closer byte     // what closes the innermost open container
	)
	kindAt := func(d int) bool {
		if d <= 64 {
			return low>>(d-1)&1 == 1
		}
		d -= 65
		return high[d/64]>>(d%64)&1 == 1
	}
	push := func(obj bool) bool {
		depth++
		inObj = obj
		if depth > maxDepth {
			return false
		}
		var bit uint64
		if obj {
			bit = 1
		}
		if depth <= 64 {
			low = low&^(1<<(depth-1)) | bit<<(depth-1)
			return true
		}
		d := depth - 65
		for len(high) <= d/64 {
			high = append(high, 0)
		}
		high[d/64] = high[d/64]&^(1<<(d%64)) | bit<<(d%64)
		return true
	}
	pop := func() {
		depth--
		inObj = depth > 0 && kindAt(depth)
		if inSub != nil && depth < 2 {
			inSub.valid = inSub.n <= maxSub
			inSub = nil
		}
	}

	s.n, s.overflow, s.object = 0, false, false
	s.ame.reset(-1)
	s.msg.reset(-1)
	i = space(b, 0)
	if i < len(b) && b[i] == '{' {
		s.object = true
	}

value:
	if i >= len(b) {
		return i, errJSON
	}
	switch c := b[i]; c {
	case '"':
		j, err := scanString(b, i+1)
		if err != nil {
			return j, err
		}
		i = j
	case '{', '[':
		obj := c == '{'
		if !push(obj) {
			return i, errJSON
		}
		if obj && depth == 2 && cur >= 0 {
			switch cur {
			case s.ame.at:
				inSub = &s.ame
			case s.msg.at:
				inSub = &s.msg
			}
		}
		i = space(b, i+1)
		if i < len(b) && b[i] == c+2 { // '}' and ']' follow their openers by two
			i++
			pop()
			goto after
		}
		if obj {
			goto key
		}
		goto value
	case 't':
		if !hasLiteral(b, i, "true") {
			return literalStop(b, i, "true"), errJSON
		}
		i += 4
	case 'f':
		if !hasLiteral(b, i, "false") {
			return literalStop(b, i, "false"), errJSON
		}
		i += 5
	case 'n':
		if !hasLiteral(b, i, "null") {
			return literalStop(b, i, "null"), errJSON
		}
		i += 4
	default:
		j, ok := scanNumber(b, i)
		if !ok {
			return j, errJSON
		}
		i = j
	}

after:
	if cur >= 0 && depth == 1 {
		m := &s.members[cur]
		m.valEnd = i
		if s.caching && !reused && cur < cachedMembers && cur != s.ame.at {
			if v := b[m.valStart:i]; len(v) >= cacheMin && len(v) <= cacheMax && (v[0] == '{' || v[0] == '[') {
				s.repeats[cur] = append(s.repeats[cur][:0], v...)
			}
		}
		cur, reused = -1, false
	} else if subCur >= 0 && depth == 2 {
		inSub.m[subCur].valEnd = i
		subCur = -1
	}
	if depth == 0 {
		return i, nil
	}
	i = space(b, i)
	if i >= len(b) {
		return i, errJSON
	}
	// A comma goes on to the next member or element; the closer closes.
	closer = ']'
	if inObj {
		closer = '}'
	}
	switch b[i] {
	case ',':
		i = space(b, i+1)
		if inObj {
			goto key
		}
		goto value
	case closer:
		i++
		pop()
		goto after
	}
	return i, errJSON

key:
	if i >= len(b) || b[i] != '"' {
		return i, errJSON
	}
	{
		j, err := scanString(b, i+1)
		if err != nil {
			return j, err
		}
		if depth == 1 {
			if s.n < maxMembers {
				cur = s.n
				s.members[cur] = member{keyStart: i + 1, keyEnd: j - 1}
				s.n++
				switch string(b[i+1 : j-1]) {
				case "assistantMessageEvent":
					s.ame.reset(cur)
				case "message":
					s.msg.reset(cur)
				}
			} else {
				s.overflow = true
			}
		} else if inSub != nil && depth == 2 {
			if inSub.n < maxSub {
				subCur = inSub.n
				inSub.m[subCur] = member{keyStart: i + 1, keyEnd: j - 1}
			}
			inSub.n++
		}
		i = space(b, j)
		if i >= len(b) || b[i] != ':' {
			return i, errJSON
		}
		i = space(b, i+1)
		if subCur >= 0 && depth == 2 {
			inSub.m[subCur].valStart = i
		}
		if cur >= 0 && depth == 1 {
			s.members[cur].valStart = i
			if cur < cachedMembers && cur != s.ame.at { // deltas never repeat
				if r := s.repeats[cur]; len(r) > 0 && len(b)-i >= len(r) && string(b[i:i+len(r)]) == string(r) {
					i += len(r)
					reused = true
					goto after
				}
			}
		}
	}
	goto value
}

// space skips JSON whitespace from b[i]; Pi writes none, so the first
// test is usually the last.
func space(b []byte, i int) int {
	if i < len(b) && b[i] > ' ' {
		return i
	}
	return skipSpace(b, i)
}

func hasLiteral(b []byte, i int, lit string) bool {
	return len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit
}

// literalStop is where b stops spelling lit from b[i], once hasLiteral
// has said it does not.
func literalStop(b []byte, i int, lit string) int {
	k := 1
	for k < len(lit) && i+k < len(b) && b[i+k] == lit[k] {
		k++
	}
	return i + k
}

// scanNumber returns the end of the number at b[i] and true, or where it
// stops being one and false.
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i++
		for i < len(b) && b[i]-'0' <= 9 {
			i++
		}
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && b[i]-'0' <= 9 {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, false
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special marks, in the top bit of each byte of w, the bytes that end or
// escape a string, are control characters, or start a multi-byte
// sequence: '"', '\\', below 0x20, above 0x7F. Only bytes above a marked
// one can be marked wrongly, so the lowest mark is always exact.
func special(w uint64) uint64 {
	quote := w ^ (ones * '"')
	slash := w ^ (ones * '\\')
	hit := (quote - ones) &^ quote
	hit |= (slash - ones) &^ slash
	hit |= w - ones*0x20 // borrows into the top bit of a byte below 0x20
	hit |= w
	return hit & highs
}

// scanString checks the string whose opening quote is at b[i-1] and
// returns the index after its closing quote, or with an error the index
// of the byte where it stops being a string.
func scanString(b []byte, i int) (int, error) {
	for {
		// Jump over plain bytes eight at a time, straight to the first
		// byte that needs a look; most strings end at the first one.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			if m := special(w); m != 0 {
				tz := bits.TrailingZeros64(m)
				i += tz >> 3
				if byte(w>>(tz&^7)) == '"' {
					return i + 1, nil
				}
				break
			}
			i += 8
		}
		if i >= len(b) {
			return i, errJSON
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, nil
		case c == '\\':
			i++
			if i >= len(b) {
				return i, errJSON
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				for k := i + 1; k < i+5; k++ {
					if k >= len(b) || !isHex(b[k]) {
						return k, errJSON
					}
				}
				i += 5
			default:
				return i, errJSON
			}
		case c < 0x20:
			return i, errJSON
		case c < utf8.RuneSelf:
			i++
		default:
			n := utf8Len(b[i:])
			if n == 0 {
				return i, errUTF8
			}
			i += n
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// utf8Len is the length of the valid multi-byte sequence that starts p,
// or 0 when it is not one, by the rules utf8.Valid applies: no overlong
// forms, no surrogates, nothing above U+10FFFF.
func utf8Len(p []byte) int {
	c := p[0]
	cont := func(k int, lo, hi byte) bool { return len(p) > k && p[k] >= lo && p[k] <= hi }
	switch {
	case c >= 0xC2 && c <= 0xDF:
		if cont(1, 0x80, 0xBF) {
			return 2
		}
	case c == 0xE0:
		if cont(1, 0xA0, 0xBF) && cont(2, 0x80, 0xBF) {
			return 3
		}
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		if cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) {
			return 3
		}
	case c == 0xED:
		if cont(1, 0x80, 0x9F) && cont(2, 0x80, 0xBF) {
			return 3
		}
	case c == 0xF0:
		if cont(1, 0x90, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) {
			return 4
		}
	case c >= 0xF1 && c <= 0xF3:
		if cont(1, 0x80, 0xBF) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) {
			return 4
		}
	case c == 0xF4:
		if cont(1, 0x80, 0x8F) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) {
			return 4
		}
	}
	return 0
}
