package sessionwatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
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

// A state written by an older pi-otel (version 2: places only, no
// session record), with a session that grew, one moved and one copied
// while it was down: what the old version traced is not traced again,
// the rest is, once.
func TestStateFromAnOlderVersion(t *testing.T) {
	h := newRealHarness(t, Config{})
	a := genSessionAt(t, "a", 120<<10, 31, h.clk.t)
	b := genSessionAt(t, "b", 80<<10, 32, h.clk.t)
	starts := runStarts(a)
	half := starts[len(starts)/2] // between two runs
	h.put("p/a.jsonl", a[:half])
	h.put("p/b.jsonl", b)
	h.finish()
	must(t, h.f.stop())
	raw, err := os.ReadFile(h.state)
	must(t, err)
	var st map[string]any
	must(t, json.Unmarshal(raw, &st))
	st["version"] = 2
	delete(st, "sessions")
	raw, err = json.Marshal(st)
	must(t, err)
	must(t, os.WriteFile(h.state, raw, 0o600))

	h.appendTo("p/a.jsonl", a[half:])
	must(t, os.Rename(h.path("p/b.jsonl"), h.path("q/b.jsonl")))
	h.copyA("q/b.jsonl", "backup/b.jsonl")
	h.start(Config{})
	h.finish()
	h.check(a, b)
}

// Random interleavings as in TestRandomFileOperationsTraceEachRunOnce,
// with an exporter that goes down and comes back, in-place rewrites of a
// file with its own session's bytes (cp over it), and long pauses
// between appends (a run longer than --close-after): every run once.
func TestRandomOperationsWithOutages(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(round), 7))
			h := newRealHarness(t, Config{})
			var ss []*liveSession
			for i := range 3 {
				s := genSessionAt(t, fmt.Sprintf("o%d-%d", round, i), int64(40<<10+rng.IntN(100<<10)), uint64(round*10+i+5000), h.clk.t)
				ss = append(ss, &liveSession{full: s, name: fmt.Sprintf("p%d/s%d.jsonl", i%2, i)})
			}
			var copies []string
			var ops []string
			for step := 0; step < 60; step++ {
				s := ss[rng.IntN(len(ss))]
				pause := time.Duration(rng.IntN(3000)) * time.Millisecond
				switch op := rng.IntN(10); {
				case op < 4 && s.wrote < len(s.full):
					n := min(len(s.full)-s.wrote, 1+rng.IntN(24<<10))
					h.appendTo(s.name, s.full[s.wrote:s.wrote+n])
					s.wrote += n
					ops = append(ops, "append")
				case op == 4 && s.wrote > 0:
					to := fmt.Sprintf("backup%d/c%d.jsonl", rng.IntN(2), step)
					h.copyA(s.name, to)
					copies = append(copies, to)
					ops = append(ops, "copy")
				case op == 5 && s.wrote > 0: // the file written over in place, with more
					n := min(len(s.full)-s.wrote, rng.IntN(16<<10))
					s.wrote += n
					h.overwrite(s.name, s.full[:s.wrote])
					ops = append(ops, "overwrite")
				case op == 6 && len(copies) > 0:
					i := rng.IntN(len(copies))
					must(t, os.Remove(h.path(copies[i])))
					copies = slices.Delete(copies, i, i+1)
					ops = append(ops, "delete copy")
				case op == 7:
					h.exp.mu.Lock()
					h.exp.down = !h.exp.down
					h.exp.mu.Unlock()
					ops = append(ops, fmt.Sprintf("down=%v", h.exp.down))
				case op == 8:
					h.restart()
					ops = append(ops, "restart")
				case op == 9 && rng.IntN(2) == 0:
					h.kill()
					ops = append(ops, "kill -9")
				}
				h.later(pause)
			}
			h.exp.mu.Lock()
			h.exp.down = false
			h.exp.mu.Unlock()
			h.writeRest(ss)
			h.step()
			h.later(10 * time.Minute) // past the retry's backoff
			h.finishAndCheck(ss, ops)
		})
	}
}

// A slow copy of an old session (rsync, a sync tool) under way when watch
// restarts: the file, written to just now, is not quiet whatever its
// entries' times say, and its run cut by the copy is traced whole once the
// copy goes on.
func TestRestartDuringSlowCopy(t *testing.T) {
	h := newRealHarness(t, Config{})
	s := genSession(t, "slow", 600<<10, 41)
	for off := 0; off < len(s); off += 64 << 10 {
		h.appendTo("p/s.jsonl", s[off:min(off+64<<10, len(s))])
		if off == 4*64<<10 {
			h.kill()
		}
		h.later(50 * time.Millisecond)
	}
	h.finish()
	h.check(s)
}

// A writer that stops just before a line's LF for longer than the settle
// time (the line, whole JSON, is read without it), then writes the LF and
// goes on: every run once, as replay traces the whole file.
func TestLineFinishedAfterItWasReadWithoutItsLF(t *testing.T) {
	h := newRealHarness(t, Config{})
	s := genSessionAt(t, "lf", 120<<10, 42, h.clk.t)
	starts := runStarts(s)
	at := starts[len(starts)/2] - 1 // the LF before a run's prompt
	h.put("p/s.jsonl", s[:at])
	h.later(time.Minute) // settled: the last line is read without its LF
	h.appendTo("p/s.jsonl", s[at:])
	h.later(time.Second)
	h.finish()
	h.check(s)
}
