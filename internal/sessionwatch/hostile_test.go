package sessionwatch

import (
	"bytes"
	"os"
	"testing"
	"time"
)

// overwrite writes b over the file name in place, as cp or a shell's >
// does to a file that exists: the same inode, truncated, then written.
func (h *realHarness) overwrite(name string, b []byte) {
	p := h.path(name)
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0o644)
	must(h.t, err)
	_, err = fh.Write(b)
	must(h.t, err)
	must(h.t, fh.Close())
	must(h.t, os.Chtimes(p, h.clk.t, h.clk.t))
}

// Another session copied over a followed file in place (cp b a: the same
// inode, truncated and written), larger than what watch had read, seen
// only once the copy is done: the newcomer is traced whole under its own
// session, and nothing of it under the old one.
func TestAnotherSessionOverwrittenInPlace(t *testing.T) {
	h := newRealHarness(t, Config{})
	a := genSessionAt(t, "a", 60<<10, 21, h.clk.t)
	b := genSessionAt(t, "b", 200<<10, 22, h.clk.t)
	h.put("p/a.jsonl", a)
	h.later(time.Minute) // a's runs are traced, its tracer alive
	h.overwrite("p/a.jsonl", b)
	h.later(time.Second)
	h.finish()
	h.check(a, b)
}

// The same, smaller than what watch had read, with a run of the first
// session still open: that run is traced, as for a file gone.
func TestSmallerSessionOverwrittenInPlace(t *testing.T) {
	h := newRealHarness(t, Config{})
	a := genSessionAt(t, "a", 200<<10, 23, h.clk.t)
	b := genSessionAt(t, "b", 60<<10, 24, h.clk.t)
	h.put("p/a.jsonl", a)
	h.later(time.Second) // a's last run still open
	h.overwrite("p/a.jsonl", b)
	h.later(time.Second)
	h.finish()
	h.check(a, b)
}

// One session rewritten in place with more than watch had read (an
// editor that saves in place, a sync tool writing over the file): each
// run once.
func TestSessionRewrittenInPlaceLarger(t *testing.T) {
	h := newRealHarness(t, Config{})
	s := genSessionAt(t, "s", 200<<10, 25, h.clk.t)
	h.put("p/s.jsonl", cut(s, len(s)/3))
	h.later(time.Second)
	// The same entries after a rewrite that changed an early line's
	// length: offsets after it no longer match.
	head, rest, _ := bytes.Cut(s, []byte("\n"))
	h.overwrite("p/s.jsonl", append(append(append([]byte{}, head...), []byte("\n\n")...), rest...))
	h.later(time.Second)
	h.finish()
	h.check(s)
}
