package framing_test

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// FuzzSplit checks that the Splitter under arbitrary chunking, the Reader
// under arbitrary read sizes and Forward all agree, and that the records
// account for every input byte: put back together with their terminators
// and the dropped empty lines, they are the input.
func FuzzSplit(f *testing.F) {
	f.Add(mixed, []byte{3, 0, 7})
	f.Add([]byte(""), []byte{})
	f.Add([]byte("\r"), []byte{0})
	f.Add([]byte("\r\n\r\r\n\n"), []byte{1})
	f.Add([]byte("a\r\r\nb\r"), []byte{2, 1})
	f.Add([]byte("{\"s\":\"\u2028\u2029\"}\r\n\xff\xfe"), []byte{5, 1, 1})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		// Splitter: chunk sizes from cuts (empty writes included), then
		// the rest in one write.
		var sc collector
		s := framing.NewSplitter(sc.emit)
		rest := data
		for _, c := range cuts {
			n := min(int(c)%32, len(rest))
			s.Write(rest[:n])
			rest = rest[n:]
		}
		s.Write(rest)
		s.Flush()
		sst := s.Stats()

		readSizes := make([]int, len(cuts))
		for i, c := range cuts {
			readSizes[i] = 1 + int(c)%31
		}
		bufSize := 1
		if len(cuts) > 0 {
			bufSize += int(cuts[0]) % 16
		}

		r := framing.NewReader(framing.ChunkReader(data, readSizes...), framing.WithReadSize(bufSize))
		rrecs, offs, err := readAllAt(r)
		if err != io.EOF {
			t.Fatalf("Reader error %v", err)
		}
		for i, off := range offs {
			// Each record begins its line, where the input holds it.
			if off > 0 && data[off-1] != '\n' || !bytes.HasPrefix(data[off:], rrecs[i]) || i > 0 && off <= offs[i-1] {
				t.Fatalf("record %d %q at offset %d of %q (offsets %v)", i, rrecs[i], off, data, offs)
			}
		}
		if !slices.EqualFunc(sc.records, rrecs, bytes.Equal) {
			t.Fatalf("Splitter %q and Reader %q disagree", sc.records, rrecs)
		}

		var fc collector
		var dst bytes.Buffer
		fst, err := framing.Forward(&dst, framing.ChunkReader(data, readSizes...), fc.emit, framing.WithReadSize(bufSize))
		if err != nil || fst.DstErr != nil {
			t.Fatalf("Forward = %v, DstErr %v", err, fst.DstErr)
		}
		if !bytes.Equal(dst.Bytes(), data) {
			t.Fatalf("Forward dst %q, want %q", dst.Bytes(), data)
		}
		if !slices.EqualFunc(sc.records, fc.records, bytes.Equal) {
			t.Fatalf("Splitter %q and Forward %q disagree", sc.records, fc.records)
		}

		if rst := r.Stats(); sst != rst || sst != fst {
			t.Fatalf("Stats disagree: Splitter %+v, Reader %+v, Forward %+v", sst, rst, fst)
		}
		if sst.Bytes != int64(len(data)) || sst.Records != int64(len(sc.records)) {
			t.Fatalf("Stats %+v for %d bytes and %d records", sst, len(data), len(sc.records))
		}

		empty := walk(t, data, sc.records)
		if sst.EmptyLines != int64(empty) {
			t.Fatalf("EmptyLines = %d, input has %d", sst.EmptyLines, empty)
		}
		want, _ := referenceSplit(data)
		if !slices.EqualFunc(sc.records, want, bytes.Equal) {
			t.Fatalf("records %q, oracle %q", sc.records, want)
		}

		checkTail(t, data, len(data)*bufSize/16, bufSize)
	})
}

// checkTail reads data with a tail as a file that grows: to cut, then to
// its end, then again from the top (Rewind). Each time it must hand out
// every line up to the last LF, empty ones too, with its offset and end,
// and leave the line without LF.
func checkTail(t *testing.T, data []byte, cut, bufSize int) {
	type line struct {
		rec      string
		off, end int64
	}
	var want []line
	for off := 0; ; {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		want = append(want, line{string(bytes.TrimSuffix(data[off:off+i], []byte{'\r'})), int64(off), int64(off + i + 1)})
		off += i + 1
	}
	var got []line
	r := framing.NewReaderAt(bytes.NewReader(data[:cut]), 0, framing.WithReadSize(bufSize))
	read := func(upTo int) {
		for {
			rec, err := r.Next()
			if err != nil {
				if err != io.EOF {
					t.Fatalf("tail error %v", err)
				}
				if i := bytes.LastIndexByte(data[:upTo], '\n'); r.End() != int64(i+1) {
					t.Fatalf("tail ended at %d of %q, want %d", r.End(), data[:upTo], i+1)
				}
				return
			}
			got = append(got, line{string(rec), r.Offset(), r.End()})
		}
	}
	read(cut)
	r.ResetAt(bytes.NewReader(data), r.End())
	read(len(data))
	if !slices.Equal(got, want) {
		t.Fatalf("tail of %q cut at %d: %v, want %v", data, cut, got, want)
	}
	got = got[:0]
	r.Rewind(0)
	read(len(data))
	if !slices.Equal(got, want) {
		t.Fatalf("tail of %q rewound: %v, want %v", data, got, want)
	}
}

// walk rebuilds data from the records: each record must appear in order,
// followed by LF, CR LF or the end of input (one CR may also precede the end
// of input), with only empty lines between records. It returns how many
// empty lines it skipped.
func walk(t *testing.T, data []byte, records [][]byte) (empty int) {
	t.Helper()
	// lineEnd is the length of the line end data starts with: LF, CRLF, or
	// a CR that ends the input; 0 for none.
	lineEnd := func() int {
		switch {
		case bytes.HasPrefix(data, []byte("\n")), string(data) == "\r":
			return 1
		case bytes.HasPrefix(data, []byte("\r\n")):
			return 2
		}
		return 0
	}
	skipEmpty := func() {
		for n := lineEnd(); n > 0; n = lineEnd() {
			data = data[n:]
			empty++
		}
	}
	for i, rec := range records {
		if len(rec) == 0 || bytes.IndexByte(rec, '\n') >= 0 {
			t.Fatalf("record %d is empty or holds an LF: %q", i, rec)
		}
		skipEmpty()
		if !bytes.HasPrefix(data, rec) {
			t.Fatalf("record %d %q is not next in the input %q", i, rec, data)
		}
		data = data[len(rec):]
		n := lineEnd()
		if n == 0 && len(data) > 0 {
			t.Fatalf("record %d %q is followed by %q, not a line end", i, rec, data)
		}
		data = data[n:]
	}
	skipEmpty()
	if len(data) > 0 {
		t.Fatalf("input %q left over after the last record", data)
	}
	return empty
}
