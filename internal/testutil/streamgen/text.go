package streamgen

import (
	"math/rand/v2"
	"strings"
)

// words is what model deltas are made of: prose, code, paths, and now and
// then characters that need escaping or are not ASCII, as real output has.
var words = strings.Fields(`
the a to of and in is that for it with as on this be are we file
function return error if else nil err := value test go run build check
let me look at first then now so which should could would need update
change config read write open close start end stream record span trace
handle parse decode encode buffer size bytes line lines record's isn't
./cmd/main.go internal/pkg/x.go README.md go.mod package import type
struct interface func() map[string]int []byte ctx context.Context
{ } ( ) [ ] ; , . : - -> => == != && || // # * ** 1 2 3 42 100 0x1F
résumé naïve café déjà-vu Größe straße 日本語 中文 한국어 emoji 🚀 ✅ ❌ →
`)

// specials are mixed into deltas rarely: each must be escaped in JSON, or
// is a raw line separator that JSON allows inside strings.
var specials = []string{"\n", "\n\n", "\"", "\\", "\t", "\u2028", "\u2029", "`", "\"quoted\"", "C:\\path\\to"}

// appendDelta appends the escaped text of one streamed chunk: one to a few
// tokens, as providers send them.
func appendDelta(b []byte, r *rand.Rand) []byte {
	n := 1 + r.IntN(4)
	for i := range n {
		if r.IntN(40) == 0 {
			b = appendEscaped(b, specials[r.IntN(len(specials))])
			continue
		}
		if i > 0 || r.IntN(3) > 0 {
			b = append(b, ' ')
		}
		b = appendEscaped(b, words[r.IntN(len(words))])
	}
	return b
}

// outputBlock is a few hundred KB of tool output (build and test log
// lines), already escaped for a JSON string, with the offset where each
// escaped line starts, so outputs of any size are cut from it cheaply and
// never split an escape or a UTF-8 sequence.
type outputBlock struct {
	escaped []byte
	starts  []int
}

func newOutputBlock(r *rand.Rand) *outputBlock {
	var ob outputBlock
	var line []byte
	for ob.len() < 256<<10 {
		line = line[:0]
		switch r.IntN(6) {
		case 0:
			line = append(line, "=== RUN   TestStream/"...)
			line = appendDelta(line, r)
		case 1:
			line = append(line, "ok  \tgithub.com/example/project/pkg"...)
			line = append(line, words[r.IntN(len(words))]...)
			line = append(line, "\t0.123s"...)
		case 2:
			line = append(line, "src/components/"...)
			line = append(line, words[r.IntN(len(words))]...)
			line = append(line, ".tsx:12:7 - warning: unused variable"...)
		case 3:
			line = append(line, "    "...)
			for range 4 + r.IntN(12) {
				line = append(line, ' ')
				line = append(line, words[r.IntN(len(words))]...)
			}
		case 4:
			line = append(line, `{"level":"info","msg":"request served","status":200}`...)
		default:
			line = append(line, "drwxr-xr-x  5 dev dev  4096 Nov 29 21:44 "...)
			line = append(line, words[r.IntN(len(words))]...)
		}
		line = append(line, '\n')
		ob.starts = append(ob.starts, len(ob.escaped))
		ob.escaped = appendEscaped(ob.escaped, string(line))
	}
	return &ob
}

func (ob *outputBlock) len() int { return len(ob.escaped) }

// appendOutput appends about n bytes of escaped output (whole lines),
// starting at line and wrapping around the block. The same line gives the
// same output, so a shorter call yields a prefix of a longer one.
func (ob *outputBlock) appendOutput(b []byte, n, line int) []byte {
	i := line % len(ob.starts)
	for n > 0 {
		start := ob.starts[i]
		end := len(ob.escaped)
		if i+1 < len(ob.starts) {
			end = ob.starts[i+1]
		}
		// Long outputs copy many lines at once.
		for end-start < n && i+1 < len(ob.starts) {
			i++
			if i+1 < len(ob.starts) {
				end = ob.starts[i+1]
			} else {
				end = len(ob.escaped)
			}
		}
		b = append(b, ob.escaped[start:end]...)
		n -= end - start
		i = (i + 1) % len(ob.starts)
	}
	return b
}
