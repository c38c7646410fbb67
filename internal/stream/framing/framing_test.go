package framing_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"syscall"
	"testing"
	"testing/iotest"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// mixed is a stream that exercises every framing rule at once.
var mixed = []byte("" +
	"{\"a\":1}\n" +
	"{\"b\":2}\r\n" +
	"\n" +
	"\r\n" +
	"{\"c\":\"x\ry\"}\n" +
	"{\"d\":1}\r\r\n" +
	"{\"e\":\"a\u2028b\u2029c\"}\n" +
	"\xff\xfe\x00garbage\xc3(\n" +
	"\r\n" +
	"\n" +
	"{\"f\":\"tail\"}")

// mixedRecords is what mixed must split into, written out by hand.
var mixedRecords = [][]byte{
	[]byte("{\"a\":1}"),
	[]byte("{\"b\":2}"),
	[]byte("{\"c\":\"x\ry\"}"),
	[]byte("{\"d\":1}\r"),
	[]byte("{\"e\":\"a\xe2\x80\xa8b\xe2\x80\xa9c\"}"),
	[]byte("\xff\xfe\x00garbage\xc3("),
	[]byte("{\"f\":\"tail\"}"),
}

const mixedEmpty = 4

func checkRecords(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("%s: got %d records %q, want %d records %q", what, len(got), quote(got), len(want), quote(want))
	}
}

func TestOracleAgreesWithHandWrittenRecords(t *testing.T) {
	// The fuzz target relies on referenceSplit; pin it to the hand-written
	// expectation first.
	recs, empty := referenceSplit(mixed)
	checkRecords(t, "referenceSplit", recs, mixedRecords)
	if empty != mixedEmpty {
		t.Fatalf("referenceSplit empty lines = %d, want %d", empty, mixedEmpty)
	}
}

func TestSplitterMixed(t *testing.T) {
	var c collector
	s := framing.NewSplitter(c.emit)
	n, err := s.Write(mixed)
	if n != len(mixed) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(mixed))
	}
	// The tail waits for Flush.
	checkRecords(t, "before Flush", c.records, mixedRecords[:len(mixedRecords)-1])
	s.Flush()
	checkRecords(t, "after Flush", c.records, mixedRecords)
	s.Flush() // nothing left: must not emit again
	checkRecords(t, "second Flush", c.records, mixedRecords)

	st := s.Stats()
	want := framing.Stats{Bytes: int64(len(mixed)), Records: int64(len(mixedRecords)), EmptyLines: mixedEmpty, LargestRecord: len(mixedRecords[4])}
	if st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
}

func TestSplitterEveryChunkBoundary(t *testing.T) {
	for i := 0; i <= len(mixed); i++ {
		got, _ := splitChunks(mixed, i)
		checkRecords(t, "split at "+itoa(i), got, mixedRecords)
		for j := 0; j <= len(mixed)-i; j++ {
			got, _ := splitChunks(mixed, i, j)
			checkRecords(t, "split at "+itoa(i)+"+"+itoa(j), got, mixedRecords)
		}
	}
	ones := make([]int, len(mixed))
	for i := range ones {
		ones[i] = 1
	}
	got, _ := splitChunks(mixed, ones...)
	checkRecords(t, "byte by byte", got, mixedRecords)
}

func TestSplitterIsZeroCopyWithinAChunk(t *testing.T) {
	p := []byte("{\"a\":1}\n{\"b\":2}\r\n{\"c\"")
	var starts []*byte
	s := framing.NewSplitter(func(rec []byte) { starts = append(starts, &rec[0]) })
	s.Write(p)
	if len(starts) != 2 || starts[0] != &p[0] || starts[1] != &p[8] {
		t.Fatalf("records were copied: got starts %p, want %p and %p", starts, &p[0], &p[8])
	}
}

func TestSplitterReuseAfterFlush(t *testing.T) {
	var c collector
	s := framing.NewSplitter(c.emit)
	s.Write([]byte("one"))
	s.Flush()
	s.Write([]byte("two\nthr"))
	s.Write([]byte("ee"))
	s.Flush()
	checkRecords(t, "records", c.records, [][]byte{[]byte("one"), []byte("two"), []byte("three")})
}

func TestSplitterNilEmitCounts(t *testing.T) {
	s := framing.NewSplitter(nil)
	s.Write(mixed)
	s.Flush()
	if st := s.Stats(); st.Records != int64(len(mixedRecords)) || st.EmptyLines != mixedEmpty {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestLineRules(t *testing.T) {
	cases := []struct {
		name  string
		in    string
		want  []string
		empty int64
	}{
		{"empty input", "", nil, 0},
		{"only LFs", "\n\n\n", nil, 3},
		{"only CRLFs", "\r\n\r\n", nil, 2},
		{"CRLF", "a\r\nb\r\n", []string{"a", "b"}, 0},
		{"only one CR stripped", "a\r\r\n", []string{"a\r"}, 0},
		{"lone CR is content", "a\rb\n\rc\n", []string{"a\rb", "\rc"}, 0},
		{"CR alone on a line is empty", "\r\n", nil, 1},
		{"CR CR alone is a record", "\r\r\n", []string{"\r"}, 0},
		{"no final LF", "a\nb", []string{"a", "b"}, 0},
		{"tail loses one CR", "a\nb\r", []string{"a", "b"}, 0},
		{"tail CR only is empty", "a\n\r", []string{"a"}, 1},
		{"tail keeps second CR", "b\r\r", []string{"b\r"}, 0},
		{"U+2028 U+2029 are not boundaries", "{\"s\":\"x\u2028y\u2029z\"}\n{\"t\":\"\u2029\"}", []string{"{\"s\":\"x\u2028y\u2029z\"}", "{\"t\":\"\u2029\"}"}, 0},
		{"other Unicode breaks are content", "a\u0085b\x0bc\x0cd\n", []string{"a\u0085b\x0bc\x0cd"}, 0},
		{"NUL and invalid UTF-8 pass", "\x00\xff\xc0\xaf\xed\xa0\x80\n", []string{"\x00\xff\xc0\xaf\xed\xa0\x80"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var want [][]byte
			for _, w := range tc.want {
				want = append(want, []byte(w))
			}
			in := []byte(tc.in)

			got, _ := splitChunks(in)
			checkRecords(t, "Splitter", got, want)

			r := framing.NewReader(bytes.NewReader(in))
			got, err := readAll(r)
			if err != io.EOF {
				t.Fatalf("Reader error = %v, want io.EOF", err)
			}
			checkRecords(t, "Reader", got, want)
			if st := r.Stats(); st.EmptyLines != tc.empty || st.Records != int64(len(want)) || st.Bytes != int64(len(in)) {
				t.Fatalf("Reader Stats = %+v, want %d records, %d empty", st, len(want), tc.empty)
			}

			var c collector
			var dst bytes.Buffer
			st, err := framing.Forward(&dst, bytes.NewReader(in), c.emit)
			if err != nil || st.DstErr != nil {
				t.Fatalf("Forward = %v, DstErr %v", err, st.DstErr)
			}
			checkRecords(t, "Forward", c.records, want)
			if !bytes.Equal(dst.Bytes(), in) {
				t.Fatalf("Forward dst = %q, want %q", dst.Bytes(), in)
			}
			if st.EmptyLines != tc.empty {
				t.Fatalf("Forward EmptyLines = %d, want %d", st.EmptyLines, tc.empty)
			}
		})
	}
}

func TestReaderMixedEveryReadSize(t *testing.T) {
	for size := 1; size <= len(mixed)+1; size++ {
		r := framing.NewReader(bytes.NewReader(mixed), framing.WithReadSize(size))
		got, err := readAll(r)
		if err != io.EOF {
			t.Fatalf("read size %d: error %v, want io.EOF", size, err)
		}
		checkRecords(t, "read size "+itoa(size), got, mixedRecords)
		want := framing.Stats{Bytes: int64(len(mixed)), Records: int64(len(mixedRecords)), EmptyLines: mixedEmpty, LargestRecord: len(mixedRecords[4])}
		if st := r.Stats(); st != want {
			t.Fatalf("read size %d: Stats = %+v, want %+v", size, st, want)
		}
	}
}

func TestReaderAwkwardSources(t *testing.T) {
	sources := map[string]func() io.Reader{
		"one byte":           func() io.Reader { return iotest.OneByteReader(bytes.NewReader(mixed)) },
		"half":               func() io.Reader { return iotest.HalfReader(bytes.NewReader(mixed)) },
		"data with EOF":      func() io.Reader { return iotest.DataErrReader(bytes.NewReader(mixed)) },
		"varying and empty":  func() io.Reader { return framing.ChunkReader(mixed, 3, 0, 1, 17, 0, 0, 5) },
		"every read at once": func() io.Reader { return framing.ChunkReader(mixed) },
	}
	for name, src := range sources {
		for _, size := range []int{1, 7, 64 << 10} {
			got, err := readAll(framing.NewReader(src(), framing.WithReadSize(size)))
			if err != io.EOF {
				t.Fatalf("%s, read size %d: error %v", name, size, err)
			}
			checkRecords(t, name, got, mixedRecords)
		}
	}
}

func TestReaderRecordSurvivesUntilNextCall(t *testing.T) {
	// A record must stay intact while the caller holds it, even if the
	// source has more data buffered behind it.
	r := framing.NewReader(bytes.NewReader([]byte("first\nsecond\nthird")), framing.WithReadSize(4))
	rec, err := r.Next()
	if err != nil || string(rec) != "first" {
		t.Fatalf("Next = %q, %v", rec, err)
	}
	rec2, err := r.Next()
	if err != nil || string(rec2) != "second" {
		t.Fatalf("Next = %q, %v", rec2, err)
	}
}

func TestReaderReturnsRecordsBeforeError(t *testing.T) {
	boom := errors.New("boom")
	src := io.MultiReader(bytes.NewReader([]byte("a\nb\r\npartial")), iotest.ErrReader(boom))
	r := framing.NewReader(src)
	got, err := readAll(r)
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want %v", err, boom)
	}
	checkRecords(t, "records", got, [][]byte{[]byte("a"), []byte("b"), []byte("partial")})
	// The error is sticky.
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("second error = %v", err)
	}
}

// stuck returns (0, nil) forever.
type stuck struct{}

func (stuck) Read([]byte) (int, error) { return 0, nil }

func TestNoProgressSourceFails(t *testing.T) {
	if _, err := framing.NewReader(stuck{}).Next(); err != io.ErrNoProgress {
		t.Fatalf("Reader error = %v, want io.ErrNoProgress", err)
	}
	if _, err := framing.Forward(io.Discard, stuck{}, nil); err != io.ErrNoProgress {
		t.Fatalf("Forward error = %v, want io.ErrNoProgress", err)
	}
}

func TestForwardMixed(t *testing.T) {
	for size := 1; size <= len(mixed)+1; size++ {
		var c collector
		var dst bytes.Buffer
		st, err := framing.Forward(&dst, bytes.NewReader(mixed), c.emit, framing.WithReadSize(size))
		if err != nil || st.DstErr != nil {
			t.Fatalf("read size %d: Forward = %v, DstErr %v", size, err, st.DstErr)
		}
		if !bytes.Equal(dst.Bytes(), mixed) {
			t.Fatalf("read size %d: dst = %q, want %q", size, dst.Bytes(), mixed)
		}
		checkRecords(t, "read size "+itoa(size), c.records, mixedRecords)
		want := framing.Stats{Bytes: int64(len(mixed)), Records: int64(len(mixedRecords)), EmptyLines: mixedEmpty, LargestRecord: len(mixedRecords[4])}
		if st != want {
			t.Fatalf("read size %d: Stats = %+v, want %+v", size, st, want)
		}
	}
}

// orderWriter checks that dst sees each chunk before any of its records is
// emitted.
type orderWriter struct {
	written []byte
}

func (w *orderWriter) Write(p []byte) (int, error) {
	w.written = append(w.written, p...)
	return len(p), nil
}

func TestForwardWritesBeforeSplitting(t *testing.T) {
	for _, size := range []int{1, 5, 16, 1 << 10} {
		var w orderWriter
		off := 0 // where the next record starts in mixed
		emit := func(rec []byte) {
			i := bytes.Index(mixed[off:], rec)
			if i < 0 {
				t.Fatalf("record %q not found after offset %d", rec, off)
			}
			end := off + i + len(rec)
			// The record's terminator (or the end of input) must already
			// have reached dst.
			need := min(end+1, len(mixed))
			if len(w.written) < need {
				t.Fatalf("read size %d: record ending at %d emitted when dst had only %d bytes", size, end, len(w.written))
			}
			off = end
		}
		if _, err := framing.Forward(&w, bytes.NewReader(mixed), emit, framing.WithReadSize(size)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestForwardDstFailsAfterN(t *testing.T) {
	stream := bytes.Repeat(mixed, 50)
	stream = append(stream, '\n')
	wantRecs, wantEmpty := referenceSplit(stream)
	for _, limit := range []int{0, 1, 7, 100, len(stream) / 2, len(stream) - 1} {
		for _, size := range []int{1, 13, 4096} {
			src := framing.ChunkReader(stream, size)
			dst := &failingWriter{limit: limit}
			var c collector
			st, err := framing.Forward(dst, src, c.emit, framing.WithReadSize(size))
			if err != nil {
				t.Fatalf("limit %d: Forward error %v", limit, err)
			}
			if !errors.Is(st.DstErr, errBroken) {
				t.Fatalf("limit %d: DstErr = %v, want %v", limit, st.DstErr, errBroken)
			}
			if dst.writes != 0 {
				t.Fatalf("limit %d: %d writes after the failure, want none", limit, dst.writes)
			}
			if !bytes.Equal(dst.buf.Bytes(), stream[:limit]) {
				t.Fatalf("limit %d: dst has %d bytes, not the stream's first %d", limit, dst.buf.Len(), limit)
			}
			if src.Len() != 0 || st.Bytes != int64(len(stream)) {
				t.Fatalf("limit %d: src not drained: %d bytes left, Stats.Bytes %d", limit, src.Len(), st.Bytes)
			}
			checkRecords(t, "records", c.records, wantRecs)
			if st.EmptyLines != int64(wantEmpty) {
				t.Fatalf("EmptyLines = %d, want %d", st.EmptyLines, wantEmpty)
			}
		}
	}
}

// shortWriter reports writing less than asked without an error, which
// breaks the io.Writer contract.
type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestForwardShortWrite(t *testing.T) {
	var c collector
	st, err := framing.Forward(shortWriter{}, bytes.NewReader(mixed), c.emit, framing.WithReadSize(8))
	if err != nil || st.DstErr != io.ErrShortWrite {
		t.Fatalf("Forward = %v, DstErr %v; want nil, io.ErrShortWrite", err, st.DstErr)
	}
	checkRecords(t, "records", c.records, mixedRecords)
}

func TestForwardSrcError(t *testing.T) {
	boom := errors.New("boom")
	in := []byte("a\nb\r\npartial")
	var dst bytes.Buffer
	var c collector
	st, err := framing.Forward(&dst, io.MultiReader(bytes.NewReader(in), iotest.ErrReader(boom)), c.emit)
	if !errors.Is(err, boom) {
		t.Fatalf("error = %v, want %v", err, boom)
	}
	if !bytes.Equal(dst.Bytes(), in) || st.Bytes != int64(len(in)) {
		t.Fatalf("dst = %q (Bytes %d), want %q", dst.Bytes(), st.Bytes, in)
	}
	checkRecords(t, "records", c.records, [][]byte{[]byte("a"), []byte("b"), []byte("partial")})
}

// TestForwardBrokenPipe mimics `pi-otel run … | head -1`: the consumer closes
// the pipe after the first line, and Pi's output must still be drained and
// traced in full.
func TestForwardBrokenPipe(t *testing.T) {
	line := []byte("{\"type\":\"message_update\",\"delta\":\"" + string(bytes.Repeat([]byte("x"), 200)) + "\"}\n")
	stream := bytes.Repeat(line, 20000) // ~4.6 MB, far beyond a pipe buffer
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	headDone := make(chan []byte)
	go func() {
		got, _ := framing.NewReader(pr).Next()
		got = bytes.Clone(got)
		pr.Close()
		headDone <- got
	}()
	n := 0
	st, err := framing.Forward(pw, bytes.NewReader(stream), func([]byte) { n++ })
	first := <-headDone
	if err != nil {
		t.Fatalf("Forward error %v", err)
	}
	if !errors.Is(st.DstErr, syscall.EPIPE) {
		t.Fatalf("DstErr = %v, want EPIPE", st.DstErr)
	}
	if !bytes.Equal(first, line[:len(line)-1]) {
		t.Fatalf("consumer read %q", first)
	}
	if n != 20000 || st.Records != 20000 || st.Bytes != int64(len(stream)) {
		t.Fatalf("emitted %d records, Stats %+v; want 20000 records of %d bytes", n, st, len(stream))
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
