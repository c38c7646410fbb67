package framing_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// item is one result of Next: a record and where its line begins, or the
// number of a line skipped for its length.
type item struct {
	rec     string
	off     int64
	tooLong int64
}

func (it item) String() string {
	if it.tooLong > 0 {
		return fmt.Sprintf("<line %d too long>", it.tooLong)
	}
	return fmt.Sprintf("%q@%d", it.rec, it.off)
}

// boundedOracle is referenceSplit with a bound: a line longer than max
// once its CR is stripped is skipped, by its number, empty lines counted.
func boundedOracle(data []byte, max int) []item {
	if len(data) == 0 {
		return nil
	}
	data = bytes.TrimSuffix(data, []byte{'\n'})
	var out []item
	var off int64
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		at := off
		off += int64(len(line)) + 1
		line = bytes.TrimSuffix(line, []byte{'\r'})
		switch {
		case len(line) > max:
			out = append(out, item{tooLong: int64(i + 1)})
		case len(line) > 0:
			out = append(out, item{rec: string(line), off: at})
		}
	}
	return out
}

// readItems reads r to its end, keeping what each Next gave.
func readItems(t *testing.T, r *framing.Reader) []item {
	t.Helper()
	var out []item
	for {
		rec, err := r.Next()
		var tl *framing.TooLongError
		switch {
		case err == nil:
			out = append(out, item{rec: string(rec), off: r.Offset()})
		case errors.As(err, &tl):
			out = append(out, item{tooLong: tl.Line})
		case err == io.EOF:
			return out
		default:
			t.Fatalf("Next: %v", err)
		}
	}
}

func checkItems(t *testing.T, what string, got, want []item) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s:\ngot  %v\nwant %v", what, got, want)
	}
}

// A line of exactly the bound is kept, CR or not; one byte more is
// skipped, wherever the reads cut it, at an LF or at the end of input.
func TestMaxRecordBoundaries(t *testing.T) {
	const max = 8
	cases := []string{
		"12345678\n", "123456789\n", "12345678\r\n", "123456789\r\n", "1234567\r\r\n",
		"12345678", "123456789", "12345678\r", "123456789\r", "\n\r\n123456789\nok\n",
		"123456789012345678901234567890\nok", "ok\n123456789012345678901234567890",
		"ok\n" + string(bytes.Repeat([]byte("x"), 100)) + "\r\nafter\r\n",
	}
	for _, c := range cases {
		want := boundedOracle([]byte(c), max)
		for size := 1; size <= len(c)+1; size++ {
			r := framing.NewReader(framing.ChunkReader([]byte(c), size), framing.WithMaxRecord(max), framing.WithReadSize(size))
			checkItems(t, fmt.Sprintf("%q, reads of %d", c, size), readItems(t, r), want)
			if n := int64(len(want)) - r.Stats().Records; r.Stats().TooLong != n {
				t.Fatalf("%q: TooLong = %d, want %d", c, r.Stats().TooLong, n)
			}
		}
	}
}

// Random lines around the bound, read in random sizes, with pieces both
// smaller and larger than the bound, agree with the oracle.
func TestMaxRecordAgreesWithOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		max := 1 + rng.IntN(300)
		var data []byte
		for range rng.IntN(30) {
			n := rng.IntN(2 * max)
			for range n {
				data = append(data, 'a'+byte(rng.IntN(26)))
			}
			if rng.IntN(4) == 0 {
				data = append(data, '\r')
			}
			data = append(data, '\n')
		}
		if rng.IntN(2) == 0 {
			data = append(data, bytes.Repeat([]byte("t"), rng.IntN(2*max))...)
		}
		size, retain := 1+rng.IntN(64), rng.IntN(400)
		r := framing.NewReader(framing.ChunkReader(data, size), framing.WithMaxRecord(max),
			framing.WithReadSize(size), framing.WithRetain(retain))
		checkItems(t, fmt.Sprintf("round %d (max %d, reads %d, retain %d)", round, max, size, retain),
			readItems(t, r), boundedOracle(data, max))
	}
}

// endless yields n bytes of c, then tail, then io.EOF, holding none of it.
type endless struct {
	c    byte
	n    int64
	tail []byte
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n > 0 {
		m := int(min(int64(len(p)), e.n))
		for i := range m {
			p[i] = e.c
		}
		e.n -= int64(m)
		return m, nil
	}
	if len(e.tail) == 0 {
		return 0, io.EOF
	}
	m := copy(p, e.tail)
	e.tail = e.tail[m:]
	return m, nil
}

// A line of 256 MiB with a bound of 1 MiB is skipped as soon as it passes
// the bound, and reading it costs about the bound, not the line: without
// the bound the Reader allocates twice the line.
func TestMaxRecordEndlessLineCostsTheBound(t *testing.T) {
	const line, bound = 256 << 20, 1 << 20
	src := &endless{c: 0, n: line, tail: []byte("\n{\"ok\":1}\n")}
	r := framing.NewReader(src, framing.WithMaxRecord(bound))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := r.Next()
	var tl *framing.TooLongError
	if !errors.As(err, &tl) || tl.Line != 1 || tl.Max != bound {
		t.Fatalf("first Next: %v, want line 1 too long", err)
	}
	if read := r.Stats().Bytes; read > 2*bound+8<<20 {
		t.Errorf("%d bytes read before the line was found too long; want about the bound", read)
	}
	rec, err := r.Next()
	if err != nil || string(rec) != `{"ok":1}` {
		t.Fatalf("after the long line: %q, %v", rec, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("at the end: %v", err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d MiB line under a %d MiB bound: %.1f MiB allocated", line>>20, bound>>20, float64(alloc)/(1<<20))
	if alloc > 16<<20 {
		t.Fatalf("%d bytes allocated for a skipped line; want under 16 MiB", alloc)
	}
	if st := r.Stats(); st.TooLong != 1 || st.Records != 1 || st.Bytes != line+10 {
		t.Fatalf("Stats = %+v", st)
	}
}
