package event

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// referenceSplit is SplitLine's rule with encoding/json's Decoder reading
// the values: from each '{', the Decoder reads one value (it reads values
// written back to back natively); a read that fails says where (a
// SyntaxError's offset, or the end for a value cut short); an object that
// begins inside a broken one counts only if it runs past where that broke.
func referenceSplit(line []byte) []Piece {
	var out []Piece
	values, garbage, broken, lastEnd := 0, -1, -1, 0
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			break
		}
		if line[i] == '{' {
			dec := json.NewDecoder(bytes.NewReader(line[i:]))
			var raw json.RawMessage
			err := dec.Decode(&raw)
			end := -1
			if err == nil {
				end = i + int(dec.InputOffset())
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
			if err != nil {
				var se *json.SyntaxError
				switch {
				case errors.As(err, &se):
					broken = max(broken, i+int(se.Offset)-1)
				case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
					broken = max(broken, len(line))
				default:
					panic(err)
				}
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

// Records as Pi writes them, to put together into damaged lines.
var splitSamples = []string{
	`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":[{"type":"text","text":"hi {not} \"json\" \u00e9"}],"timestamp":1}}`,
	`{"type":"message","id":"a2","parentId":"a1","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls [a-z]*"}}],"usage":{"input":10,"output":2,"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5e-3}}}}`,
	`{"type":"agent_end","messages":[],"isTerminal":true,"n":-0.5E+2,"x":[[],{},[{}],null,false]}`,
	`{"type":"model_change","provider":"p","modelId":"m"}`,
	`{}`,
}

// Pieces of garbage: what a cut write, padding or a torn copy leaves.
var splitGarbage = []string{"", " ", "\x00\x00", "garbage", "}", "]", `"`, "\\", "{", `{"`, `{"a"`, `{"a":`, `{"a":[`, "\xff\xfe", "tru", "-", "1.", `{"a":"\u12`, "\t\r "}

// cut is s cut at n bytes (n within its length).
func cut(s string, n int) string { return s[:min(n, len(s))] }

// SplitLine agrees with the reference on lines made of whole records,
// records cut short and garbage, in any order.
func TestSplitLineMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			switch r.IntN(3) {
			case 0:
				b.WriteString(splitSamples[r.IntN(len(splitSamples))])
			case 1:
				s := splitSamples[r.IntN(len(splitSamples))]
				b.WriteString(cut(s, r.IntN(len(s)+1)))
			default:
				b.WriteString(splitGarbage[r.IntN(len(splitGarbage))])
			}
		}
		checkSplit(t, []byte(b.String()))
	}
}

func checkSplit(t *testing.T, line []byte) {
	t.Helper()
	got, want := SplitLine(line), referenceSplit(line)
	if !slices.Equal(got, want) {
		t.Fatalf("%q:\n got %v\nwant %v", line, show(line, got), show(line, want))
	}
	for _, p := range got {
		if p.Value && !json.Valid(line[p.Start:p.End]) {
			t.Fatalf("%q: piece %q is no JSON value", line, line[p.Start:p.End])
		}
	}
}

func show(line []byte, ps []Piece) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "[%v %q] ", p.Value, line[p.Start:p.End])
	}
	return b.String()
}

func FuzzSplitLine(f *testing.F) {
	for _, a := range splitSamples {
		f.Add([]byte(a + a))
		f.Add([]byte(cut(a, len(a)/2) + a))
		f.Add([]byte(a + "\x00 junk " + a))
		for _, g := range splitGarbage {
			f.Add([]byte(a + g + a))
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkSplit(t, line)
	})
}

func TestSplitLine(t *testing.T) {
	a, b := splitSamples[0], splitSamples[1]
	for _, tc := range []struct {
		line string
		want []string // the pieces; garbage in <>
	}{
		{a + b, []string{a, b}},
		{a + "  " + b + "\r", []string{a, b}},
		{a + "\x00\x00\x00" + b, []string{a, "<\x00\x00\x00>", b}},
		{a + "garbage", []string{a, "<garbage>"}},
		{"garbage " + a, []string{"<garbage>", a}},
		// A record cut short, then the next one written over its end.
		{cut(a, 90) + b, []string{"<" + cut(a, 90) + ">", b}},
		{cut(b, strings.Index(b, "bash")+2) + a, []string{"<" + cut(b, strings.Index(b, "bash")+2) + ">", a}},
		// Cut where the next record reads as its value: nothing runs
		// past where the line broke, so nothing is recovered.
		{`{"type":"x","message":` + a, nil},
		// One value, cut or whole: nothing to take apart.
		{cut(a, 60), nil},
		{a, nil},
		{"  " + a + " ", nil},
		{"garbage", nil},
		{"", nil},
	} {
		line := []byte(tc.line)
		checkSplit(t, line)
		var got []string
		for _, p := range SplitLine(line) {
			s := string(line[p.Start:p.End])
			if !p.Value {
				s = "<" + s + ">"
			}
			got = append(got, s)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q:\n got %q\nwant %q", tc.line, got, tc.want)
		}
	}
}

// A line made to be read again from each of its braces is given up on
// (nil: one damaged line), not read in quadratic time.
func TestSplitLineHostile(t *testing.T) {
	line := []byte(strings.Repeat(`{"a":`, 200_000) + "{}")
	if got := SplitLine(line); got != nil {
		t.Fatalf("got %d pieces", len(got))
	}
	// Past encoding/json's nesting limit, the reader breaks where it does.
	checkSplit(t, []byte(`{"a":`+strings.Repeat("[", 20_000)+splitSamples[0]))
	checkSplit(t, []byte(`{"a":`+strings.Repeat("[", 9_998)+strings.Repeat("]", 9_998)+"}"+splitSamples[0]))
}

// TestSplitLineCopiesNoASCIILine: a torn line of base64 (an image, the
// usual huge line) is split where it lies; watch's memory bound has no
// room for a copy of it.
func TestSplitLineCopiesNoASCIILine(t *testing.T) {
	image := strings.Repeat("QUJD", 4<<20) // 16 MB
	line := []byte(`{"type":"message","data":"` + image[:len(image)/2] + `{"type":"message","data":"` + image + `"}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	pieces := SplitLine(line)
	runtime.ReadMemStats(&after)
	if len(pieces) != 2 || pieces[0].Value || !pieces[1].Value {
		t.Fatalf("pieces %+v, want the torn part and a record", pieces)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("SplitLine allocated %d bytes for a %d-byte line", n, len(line))
	}
}
