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

// runStarts are the offsets of the lines that begin runs (user messages).
func runStarts(b []byte) []int {
	var out []int
	for off := 0; off < len(b); {
		n := bytes.IndexByte(b[off:], '\n')
		if n < 0 {
			break
		}
		if bytes.Contains(b[off:off+n], []byte(`"role":"user"`)) {
			out = append(out, off)
		}
		off += n + 1
	}
	return out
}

// A backup made with cp -a mid-run while Pi goes on with that run for
// longer than --close-after (a long agent run, a step every few minutes):
// the copy, quiet, must not close the run as unfinished before the file
// Pi writes completes it. The run is traced once, whole.
func TestSnapshotDoesNotCloseARunStillGoingOn(t *testing.T) {
	h := newRealHarness(t, Config{})
	s := genSessionAt(t, "long", 200<<10, 26, h.clk.t)
	starts := runStarts(s)
	if len(starts) < 3 {
		t.Fatalf("%d runs", len(starts))
	}
	from, to := starts[1], starts[2] // the second run
	mid := len(cut(s, from+1))       // its prompt
	h.put("p/s.jsonl", s[:mid])
	h.later(time.Second)
	h.copyA("p/s.jsonl", "backup/p/s.jsonl")
	h.later(time.Second)
	// The rest of the run, a line every 10 minutes for 90 minutes (the
	// harness's CloseAfter is an hour).
	lines := bytes.SplitAfter(s[mid:to], []byte("\n"))
	for i, l := range lines {
		h.appendTo("p/s.jsonl", l)
		if i < 9 {
			h.later(10 * time.Minute)
		}
	}
	h.appendTo("p/s.jsonl", s[to:])
	h.later(time.Second)
	h.finish()
	h.check(s)
}

// A followed file deleted and another session written under the same
// name at once (its inode, freed, most likely taken again), larger than
// what watch had read: two sessions, each traced whole, once.
func TestDeletedAndRecreatedWithAnotherSession(t *testing.T) {
	h := newRealHarness(t, Config{})
	a := genSessionAt(t, "a", 60<<10, 27, h.clk.t)
	b := genSessionAt(t, "b", 200<<10, 28, h.clk.t)
	p := h.put("p/s.jsonl", a)
	h.later(time.Second)
	before, err := os.Stat(p)
	must(t, err)
	must(t, os.Remove(p))
	h.put("p/s.jsonl", b)
	after, err := os.Stat(p)
	must(t, err)
	t.Logf("inode taken again: %v", identity(before) == identity(after))
	h.later(time.Second)
	h.finish()
	h.check(a, b)
}
