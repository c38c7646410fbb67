package framing

import (
	"bytes"
	"io"
	"runtime"
	"testing"
)

// These tests measure live heap, so they stay sequential.

const memHuge = 64 << 20

// patternReader yields n bytes of a fixed pattern without holding them.
type patternReader struct{ off, n int }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off == p.n {
		return 0, io.EOF
	}
	m := min(len(b), p.n-p.off)
	for i := range m {
		b[i] = patternByte(p.off + i)
	}
	p.off += m
	return m, nil
}

func patternByte(i int) byte { return 'a' + byte(i%26) }

// lineReader yields n copies of smallLine without holding them.
type lineReader struct{ off, n int }

func (l *lineReader) Read(b []byte) (int, error) {
	total := l.n * len(smallLine)
	if l.off == total {
		return 0, io.EOF
	}
	m := min(len(b), total-l.off)
	for i := range m {
		b[i] = smallLine[(l.off+i)%len(smallLine)]
	}
	l.off += m
	return m, nil
}

func checkPattern(t *testing.T, rec []byte) {
	t.Helper()
	if len(rec) != memHuge {
		t.Fatalf("huge record is %d bytes, want %d", len(rec), memHuge)
	}
	for i, c := range rec {
		if c != patternByte(i) {
			t.Fatalf("huge record byte %d = %q", i, c)
		}
	}
}

var smallLine = append(bytes.Repeat([]byte("s"), 249), '\n')

// generated is 100 small records, one 64 MiB record, then 4000 small
// records (1 MB, many reads' worth), never held in memory as a whole.
func generated() io.Reader {
	return io.MultiReader(
		&lineReader{n: 100},
		&patternReader{n: memHuge},
		bytes.NewReader([]byte{'\n'}),
		&lineReader{n: 4000},
	)
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// memProbe records live heap at the huge record and at the last small one.
type memProbe struct {
	t                 *testing.T
	base, peak, after uint64
	small             int
}

func (p *memProbe) emit(rec []byte) {
	if len(rec) == memHuge {
		p.peak = liveHeap()
		checkPattern(p.t, rec)
		return
	}
	if p.small++; p.small == 4100 {
		p.after = liveHeap()
	}
}

// check reports the heap seen while the huge record was out and after it;
// kept is the capacity the reader's buffer kept once it was done.
func (p *memProbe) check(what string, kept int) {
	t := p.t
	t.Helper()
	if kept > defaultRetain {
		t.Fatalf("%s: its buffer kept %d bytes after the huge record", what, kept)
	}
	if p.small != 4100 || p.peak == 0 {
		t.Fatalf("%s: saw %d small records, huge seen: %v", what, p.small, p.peak != 0)
	}
	peak := float64(p.peak-min(p.base, p.peak)) / memHuge
	after := int64(p.after) - int64(p.base)
	t.Logf("%s: live heap while the 64 MiB record is out: %.2fx the record; after later records: %+d bytes", what, peak, after)
	if peak > 3 {
		t.Errorf("%s: live heap %.2fx the largest record, want under 3x", what, peak)
	}
	// What may stay: one read buffer and a carry for small records.
	if after > 512<<10 {
		t.Errorf("%s: %d bytes still live after the huge record, want the buffer released", what, after)
	}
}

func TestMemorySplitter(t *testing.T) {
	p := &memProbe{t: t, base: liveHeap()}
	s := NewSplitter(p.emit)
	src := generated()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		s.Write(buf[:n])
		// The carry and the pieces never hold more than about twice their
		// content (plus one chunk).
		if c, l := s.parts.n+cap(s.carry), s.parts.n+len(s.carry); c > 2*l+len(buf) {
			t.Fatalf("carry and pieces hold %d bytes for %d", c, l)
		}
		if err != nil {
			break
		}
	}
	s.Flush()
	p.check("Splitter", cap(s.carry))
	runtime.KeepAlive(s)
}

// drain hands every record of r to f, which must not keep it, until r
// fails or ends; the end is not an error.
func drain(r *Reader, f func(rec []byte)) error {
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		f(rec)
	}
}

func TestMemoryReader(t *testing.T) {
	p := &memProbe{t: t, base: liveHeap()}
	r := NewReader(generated())
	if err := drain(r, p.emit); err != nil {
		t.Fatal(err)
	}
	p.check("Reader", cap(r.buf))
	runtime.KeepAlive(r)
}

func TestMemoryForward(t *testing.T) {
	p := &memProbe{t: t, base: liveHeap()}
	st, err := Forward(io.Discard, generated(), p.emit)
	if err != nil || st.LargestRecord != memHuge {
		t.Fatalf("Forward = %+v, %v", st, err)
	}
	p.check("Forward", 0) // no buffer outlives the call to look at
}

// allocHuge is the record size of the allocation tests: far above the
// retain limit, so a buffer that grows with it is never reused.
const allocHuge = 24 << 20

// hugeRecords yields n records of allocHuge bytes, each ended by an LF,
// without holding them.
func hugeRecords(n int) io.Reader {
	var rs []io.Reader
	for range n {
		rs = append(rs, &patternReader{n: allocHuge}, bytes.NewReader([]byte{'\n'}))
	}
	return io.MultiReader(rs...)
}

// allocated returns the bytes allocated on the heap while f runs. The
// count is cumulative, so unlike live heap or RSS it does not depend on
// when the collector runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// checkAllocated fails if reading n huge records allocated more than
// limit times their size. A record that spans reads is copied once into a
// buffer of its exact size, from pieces that are never copied themselves:
// about twice the record. Growing one buffer by half, copying on each
// step, allocated about 3.5 times it; append about 5 times.
func checkAllocated(t *testing.T, what string, n int, total uint64) {
	t.Helper()
	per := float64(total) / float64(n) / allocHuge
	t.Logf("%s: %.2fx each record allocated while reading %d records of %d MiB", what, per, n, allocHuge>>20)
	if per > 2.3 {
		t.Errorf("%s: allocated %.2fx each huge record, want at most 2.3x (pieces plus one copy)", what, per)
	}
}

func TestAllocatedReader(t *testing.T) {
	const n = 4
	seen := 0
	got := allocated(func() {
		r := NewReader(hugeRecords(n))
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			if len(rec) != allocHuge || rec[allocHuge-1] != patternByte(allocHuge-1) {
				t.Fatalf("record %d is %d bytes", seen, len(rec))
			}
			seen++
		}
	})
	if seen != n {
		t.Fatalf("read %d records, want %d", seen, n)
	}
	checkAllocated(t, "Reader", n, got)
}

func TestAllocatedSplitter(t *testing.T) {
	const n = 4
	seen := 0
	emit := func(rec []byte) {
		if len(rec) != allocHuge || rec[allocHuge-1] != patternByte(allocHuge-1) {
			t.Fatalf("record %d is %d bytes", seen, len(rec))
		}
		seen++
	}
	got := allocated(func() {
		if _, err := Forward(io.Discard, hugeRecords(n), emit); err != nil {
			t.Fatal(err)
		}
	})
	if seen != n {
		t.Fatalf("split %d records, want %d", seen, n)
	}
	checkAllocated(t, "Forward", n, got)
}

// A tail reads a line longer than its buffer into one buffer of the
// line's length, found ahead in the file: allocHuge lines cost about
// their size each, not twice it. A line still being written is not read
// and grows nothing.
func TestAllocatedTail(t *testing.T) {
	const n = 4
	line := bytes.Repeat([]byte{'x'}, allocHuge)
	line[allocHuge-1] = '\n'
	src := bytes.NewReader(bytes.Repeat(line, n))
	seen := 0
	got := allocated(func() {
		r := NewReaderAt(src, 0)
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			if len(rec) != allocHuge-1 || len(r.buf) != allocHuge {
				t.Fatalf("record %d is %d bytes, read into %d", seen, len(rec), len(r.buf))
			}
			seen++
		}
	})
	if per := float64(got) / n / allocHuge; seen != n || per > 1.1 {
		t.Errorf("read %d records (want %d), allocating %.2fx each, want at most 1.1x", seen, n, per)
	}

	r := NewReaderAt(bytes.NewReader([]byte("abcdef")), 0, WithReadSize(3))
	if rec, err := r.Next(); err != io.EOF || rec != nil || r.End() != 0 || len(r.buf) != 3 {
		t.Errorf("a line still being written: %q, %v, End %d, buffer %d; want io.EOF, 0, 3", rec, err, r.End(), len(r.buf))
	}
}

// A tail's buffer that a long line grew past WithRetain is let go when
// the reader moves on (ResetAt), and a small one is kept: a follower
// keeps its readers from file to file.
func TestResetAtLetsGoOfAGrownBuffer(t *testing.T) {
	long := append(bytes.Repeat([]byte{'x'}, 1000), '\n')
	r := NewReaderAt(bytes.NewReader(long), 0, WithReadSize(64), WithRetain(512))
	if rec, err := r.Next(); err != nil || len(rec) != 1000 || len(r.buf) != len(long) {
		t.Fatalf("Next = %d bytes, %v, buffer %d; want the line in a buffer of its length", len(rec), err, len(r.buf))
	}
	r.ResetAt(bytes.NewReader([]byte("a\n")), 0)
	if len(r.buf) != 0 {
		t.Errorf("a %d-byte buffer held after ResetAt", len(r.buf))
	}
	if rec, err := r.Next(); err != nil || string(rec) != "a" || len(r.buf) != 64 {
		t.Errorf("after ResetAt: %q, %v, buffer %d; want \"a\" in a new buffer of 64", rec, err, len(r.buf))
	}
	kept := &r.buf[0]
	r.ResetAt(bytes.NewReader([]byte("b\n")), 0)
	if rec, err := r.Next(); err != nil || string(rec) != "b" || &r.buf[0] != kept {
		t.Errorf("a small buffer was not kept: %q, %v", rec, err)
	}
}
