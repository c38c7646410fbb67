package framing

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

// FuzzPieces runs the Splitter and the Reader with pieces and a retain
// limit of a few bytes, so that inputs of fuzzing size take the paths of
// records many megabytes long: records kept in pieces, joined into the
// reused buffer or, past retain, into their own, and the buffer released
// afterwards. The records must be the lines of the input.
func FuzzPieces(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\ncccccccccccccccccccccccccccc\ndd\r"), []byte{1, 2, 3, 4})
	f.Add(bytes.Repeat([]byte("0123456789abcdef"), 40), []byte{7, 0, 31})
	f.Add([]byte("\r\n\r\r\n\nxx\ryy\nzz"), []byte{})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		want := lines(data)
		param := func(i, mod int) int {
			if i < len(cuts) {
				return int(cuts[i]) % mod
			}
			return 0
		}
		retain, first, piece := param(0, 24), 1+param(1, 4), 1+param(2, 16)

		var got [][]byte
		s := NewSplitter(func(rec []byte) { got = append(got, bytes.Clone(rec)) }, WithRetain(retain))
		s.first, s.piece = first, max(first, piece)
		rest := data
		for i := 3; i < len(cuts); i++ {
			n := min(int(cuts[i])%32, len(rest))
			s.Write(rest[:n])
			rest = rest[n:]
		}
		s.Write(rest)
		s.Flush()
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("Splitter (retain %d, pieces %d..%d): %q, want %q", retain, first, piece, got, want)
		}
		if s.parts.n != 0 || cap(s.carry) > max(retain, s.piece) {
			t.Fatalf("Splitter holds %d bytes in pieces and a carry of %d after Flush", s.parts.n, cap(s.carry))
		}

		sizes := make([]int, 0, len(cuts))
		for _, c := range cuts {
			sizes = append(sizes, 1+int(c)%13)
		}
		r := NewReader(&chunkReader{data: data, sizes: sizes}, WithReadSize(first), WithRetain(retain))
		r.piece = max(first, piece)
		got = got[:0]
		if err := drain(r, func(rec []byte) { got = append(got, bytes.Clone(rec)) }); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("Reader (retain %d, read %d, pieces up to %d): %q, want %q", retain, first, r.piece, got, want)
		}
	})
}

// lines is the reference: records end at LF or at the end, lose one CR
// before it, and empty ones are dropped.
func lines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data
		if i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// chunkReader returns data in reads of the given sizes, cycling through
// them; a size of 0 makes a (0, nil) read.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *chunkReader) Len() int { return len(r.data) }

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if len(r.sizes) > 0 {
		n = r.sizes[r.i%len(r.sizes)]
		r.i++
	}
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}
