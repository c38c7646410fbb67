package framing_test

import (
	"bytes"
	"errors"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// referenceSplit is the test oracle, written independently of the package:
// EOF ends the last line like an LF, one CR before the end of a line is
// dropped, and empty lines are dropped (but counted).
func referenceSplit(data []byte) (records [][]byte, empty int) {
	if len(data) == 0 {
		return nil, 0
	}
	if data[len(data)-1] == '\n' {
		data = data[:len(data)-1]
	}
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			empty++
			continue
		}
		records = append(records, line)
	}
	return records, empty
}

// collector keeps copies of emitted records.
type collector struct{ records [][]byte }

func (c *collector) emit(rec []byte) { c.records = append(c.records, bytes.Clone(rec)) }

// splitChunks feeds data to a fresh Splitter in chunks of the given sizes
// (the remainder goes in one last chunk) and returns the records.
func splitChunks(data []byte, sizes ...int) ([][]byte, *collector) {
	var c collector
	s := framing.NewSplitter(c.emit)
	for _, n := range sizes {
		n = min(n, len(data))
		s.Write(data[:n])
		data = data[n:]
	}
	s.Write(data)
	s.Flush()
	return c.records, &c
}

var errBroken = errors.New("broken pipe (test)")

// failingWriter accepts limit bytes, then fails every write.
type failingWriter struct {
	buf    bytes.Buffer
	limit  int
	failed bool
	writes int // writes attempted after the first failure
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.failed {
		w.writes++
		return 0, errBroken
	}
	room := w.limit - w.buf.Len()
	if room >= len(p) {
		return w.buf.Write(p)
	}
	w.failed = true
	w.buf.Write(p[:room])
	return room, errBroken
}

// readAll drains a Reader, copying records.
func readAll(r recordReader) ([][]byte, error) {
	var out [][]byte
	for {
		rec, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, bytes.Clone(rec))
	}
}

// readAllAt is readAll of a Reader, with each record's Offset.
func readAllAt(r *framing.Reader) ([][]byte, []int64, error) {
	var out [][]byte
	var offs []int64
	for {
		rec, err := r.Next()
		if err != nil {
			return out, offs, err
		}
		out = append(out, bytes.Clone(rec))
		offs = append(offs, r.Offset())
	}
}

type recordReader interface{ Next() ([]byte, error) }

func quote(recs [][]byte) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		if len(r) > 80 {
			out[i] = string(r[:40]) + "…" + string(r[len(r)-40:])
			continue
		}
		out[i] = string(r)
	}
	return out
}
