package sessionwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// A new tracer's lines are read with its header, into the same buffer:
// whatever the lengths of the first lines, against the buffer's (4 KiB
// for a header, readSize for lines), with oh-my-pi's title line before
// the header, and with a last line still being written, every complete
// line is fed once, at its offset, read ahead or line by line.
func TestLinesReadWithTheHeader(t *testing.T) {
	line := func(n int) string { return strings.Repeat("x", n-1) + "\n" }
	cases := map[string]string{
		"short":          "H\nU\nA\n",
		"title":          `{"type":"title","t":"a"}` + "\nH\nU\n",
		"title-long":     `{"type":"title"` + line(70000) + "H\nU\n",
		"crlf":           "H\r\nU\r\nA",
		"fills-buffer":   line(readSize),
		"buffer-and-one": line(readSize) + "U\n",
		"buffer-minus":   line(readSize-1) + "U\nA",
		"header-4k":      line(4096) + line(readSize-4096) + line(10),
		"header-4k+1":    line(4097) + "U\n",
		"header-long":    line(3<<20) + "U\nA\n",
		"header-partial": strings.Repeat("x", 3<<20),
		"lines-span":     "H\n" + strings.Repeat(line(1000), 200) + "tail",
	}
	for _, lineOnly := range []bool{false, true} {
		for name, content := range cases {
			// A follower each: its buffers are new, of their first size.
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			b := &book{lineOnly: lineOnly}
			f := b.follow(Config{Dirs: []string{dir}, Flush: b.flush, Since: SinceAll})
			if err := f.load(); err != nil {
				t.Fatal(err)
			}
			f.scan(true)
			var lines []string
			var offs []int64
			for off := 0; ; {
				i := strings.IndexByte(content[off:], '\n')
				if i < 0 {
					break
				}
				lines = append(lines, strings.TrimSuffix(content[off:off+i], "\r"))
				offs = append(offs, int64(off))
				off += i + 1
			}
			if len(b.tracers) == 0 {
				if len(lines) > 0 {
					t.Errorf("%s (line only %v): no tracer", name, lineOnly)
				}
				continue
			}
			if tr := b.tracers[0]; !slices.Equal(tr.lines, lines) || !slices.Equal(tr.offs, offs) {
				t.Errorf("%s (line only %v): %s, want %s", name, lineOnly, brief(tr.lines, tr.offs), brief(lines, offs))
			}
		}
	}
}

// brief describes lines by their lengths and offsets.
func brief(lines []string, offs []int64) string {
	var b strings.Builder
	for i, l := range lines {
		fmt.Fprintf(&b, "%d:%d ", offs[i], len(l))
	}
	return b.String()
}

// A first line longer than the read buffer is read whole, and one still
// being written is not read (the buffer it takes is framing's
// TestAllocatedTail).
func TestFirstLineReadsALongHeader(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	long := strings.Repeat("y", 10000)
	if err := os.WriteFile(p, []byte(long+"\nnext\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lr := framing.NewReaderAt(mustOpen(t, p), 0, framing.WithReadSize(16))
	first, ok := firstLine(lr)
	if !ok || string(first) != long || lr.End() != int64(len(long)+1) {
		t.Errorf("firstLine = %d bytes, ending at %d, %v; want the line, %d, true", len(first), lr.End(), ok, len(long)+1)
	}
	if err := os.WriteFile(p, []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	lr = framing.NewReaderAt(mustOpen(t, p), 0, framing.WithReadSize(16))
	if line, ok := firstLine(lr); ok || lr.End() != 0 {
		t.Errorf("a line still being written: %d bytes, ok %v, End %d; want none, false, 0", len(line), ok, lr.End())
	}
}
