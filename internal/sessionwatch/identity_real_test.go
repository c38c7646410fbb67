package sessionwatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/ledger"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// The tests here follow real-shaped session files with the real tracer
// (internal/session) and compare what the exporter took with replaying
// the same sessions: every span once, by its deterministic id, whatever
// happened to the files.

// exporter is a fake exporter behind the real tracer: ended spans wait
// until a flush, which takes them (or loses them, when down).
type exporter struct {
	mu       sync.Mutex
	pending  []string
	accepted map[string]int
	down     bool
}

func (e *exporter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (e *exporter) OnEnd(s sdktrace.ReadOnlySpan) {
	e.mu.Lock()
	e.pending = append(e.pending, s.SpanContext().SpanID().String())
	e.mu.Unlock()
}
func (e *exporter) Shutdown(context.Context) error   { return nil }
func (e *exporter) ForceFlush(context.Context) error { return nil }

func (e *exporter) flush(context.Context, bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		e.pending = nil
		return fmt.Errorf("collector down")
	}
	for _, id := range e.pending {
		e.accepted[id]++
	}
	e.pending = nil
	return nil
}

// killed drops what a killed process had not exported.
func (e *exporter) killed() {
	e.mu.Lock()
	e.pending = nil
	e.mu.Unlock()
}

type realHarness struct {
	t     *testing.T
	dir   string
	state string
	clk   *clock
	exp   *exporter
	tp    *sdktrace.TracerProvider
	ids   *spanid.Generator
	f     *Follower
	logs  []string
}

func newRealHarness(t *testing.T, cfg Config) *realHarness {
	h := &realHarness{t: t, dir: t.TempDir(), state: filepath.Join(t.TempDir(), "watch.json"),
		clk: &clock{t: time.Now()}, exp: &exporter{accepted: map[string]int{}}, ids: spanid.NewGenerator(nil)}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(h.ids), sdktrace.WithSpanProcessor(h.exp))
	h.start(cfg)
	return h
}

// start does what Run does before its loop, without inotify.
func (h *realHarness) start(cfg Config) {
	cfg.Dirs = []string{h.dir}
	cfg.StatePath = h.state
	cfg.Flush = h.exp.flush
	cfg.Now = h.clk.now
	cfg.IsSession = session.Starts
	cfg.Logf = func(format string, args ...any) { h.logs = append(h.logs, fmt.Sprintf(format, args...)) }
	cfg.Ledger = ledger.New()
	cfg.NewTracer = func(spec TracerSpec) Tracer {
		return fileTracer{session.New(session.Config{TracerProvider: h.tp, Runs: claimIn(cfg.Ledger, spec)})}
	}
	if cfg.Settle == 0 {
		cfg.Settle = 10 * time.Second
	}
	if cfg.CloseAfter == 0 {
		cfg.CloseAfter = time.Hour
	}
	h.f = New(cfg)
	if err := h.f.load(); err != nil {
		h.t.Fatal(err)
	}
	if err := h.f.state.Save(h.state); err != nil {
		h.t.Fatal(err)
	}
	h.f.scan(true)
	h.f.state.Scan = nil
	h.f.saveState()
	h.f.work(context.Background())
}

func (h *realHarness) step() {
	h.f.scan(false)
	h.f.work(context.Background())
}

func (h *realHarness) later(d time.Duration) {
	h.clk.t = h.clk.t.Add(d)
	h.step()
}

// restart stops the follower as a signal does, and starts another.
func (h *realHarness) restart() {
	if err := h.f.stop(); err != nil {
		h.t.Fatal(err)
	}
	h.start(Config{})
}

// kill drops the follower as kill -9 does: no last flush, no save.
func (h *realHarness) kill() {
	h.exp.killed()
	h.start(Config{})
}

// finish traces what is left: everything quiet past CloseAfter.
func (h *realHarness) finish() {
	h.later(2 * time.Hour)
	h.later(2 * time.Hour)
}

func (h *realHarness) path(name string) string {
	p := filepath.Join(h.dir, name)
	must(h.t, os.MkdirAll(filepath.Dir(p), 0o755))
	return p
}

// put writes b as the file name, modified now by the clock.
func (h *realHarness) put(name string, b []byte) string {
	p := h.path(name)
	must(h.t, os.WriteFile(p, b, 0o644))
	must(h.t, os.Chtimes(p, h.clk.t, h.clk.t))
	return p
}

// appendTo appends b to the file name.
func (h *realHarness) appendTo(name string, b []byte) {
	p := h.path(name)
	fh, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	must(h.t, err)
	_, err = fh.Write(b)
	must(h.t, err)
	must(h.t, fh.Close())
	must(h.t, os.Chtimes(p, h.clk.t, h.clk.t))
}

// copyA copies a file keeping its times, as cp -a does.
func (h *realHarness) copyA(from, to string) {
	src := h.path(from)
	b, err := os.ReadFile(src)
	must(h.t, err)
	st, err := os.Stat(src)
	must(h.t, err)
	dst := h.path(to)
	must(h.t, os.WriteFile(dst, b, 0o644))
	must(h.t, os.Chtimes(dst, st.ModTime(), st.ModTime()))
}

// replaceByRename writes b to a temporary file and renames it over name,
// as rsync and Syncthing update a file.
func (h *realHarness) replaceByRename(name string, b []byte) {
	tmp := h.path(filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp"))
	must(h.t, os.WriteFile(tmp, b, 0o644))
	must(h.t, os.Chtimes(tmp, h.clk.t, h.clk.t))
	must(h.t, os.Rename(tmp, h.path(name)))
}

// check compares what was exported with replaying the sessions whole.
func (h *realHarness) check(sessions ...[]byte) {
	h.t.Helper()
	var paths []string
	for i, b := range sessions {
		p := filepath.Join(h.t.TempDir(), fmt.Sprintf("s%d.jsonl", i))
		must(h.t, os.WriteFile(p, b, 0o644))
		paths = append(paths, p)
	}
	want := historytest.Replay(h.t, paths).Spans
	var dups, missing, extra int
	for id, n := range h.exp.accepted {
		if n > 1 {
			dups += n - 1
		}
		if _, ok := want[id]; !ok {
			extra++
		}
	}
	for id := range want {
		if h.exp.accepted[id] == 0 {
			missing++
		}
	}
	if missing > 0 {
		for i, p := range paths {
			n := 0
			for id := range historytest.Replay(h.t, []string{p}).Spans {
				if h.exp.accepted[id] == 0 {
					n++
				}
			}
			h.t.Logf("session %d: %d spans missing", i, n)
		}
	}
	if dups+missing+extra > 0 {
		h.t.Errorf("exported %d distinct spans, replay gives %d: %d twice or more, %d missing, %d not in replay",
			len(h.exp.accepted), len(want), dups, missing, extra)
	}
	if len(want) == 0 {
		h.t.Fatal("the sessions have no spans")
	}
}

// genSession is a real-shaped session of about size bytes, from January.
func genSession(t *testing.T, id string, size int64, seed uint64) []byte {
	return genSessionAt(t, id, size, seed, time.Time{})
}

// genSessionAt is genSession begun at start.
func genSessionAt(t *testing.T, id string, size int64, seed uint64, start time.Time) []byte {
	var b bytes.Buffer
	if _, err := sessiongen.Write(&b, sessiongen.Config{Size: size, Seed: seed, ID: id, Start: start}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// cut is b up to the end of the line that holds byte n.
func cut(b []byte, n int) []byte {
	if n >= len(b) {
		return b
	}
	if i := bytes.IndexByte(b[n:], '\n'); i >= 0 {
		return b[:n+i+1]
	}
	return b
}

// A session copied slowly into the watched folder (64 KB every 50 ms, as
// rsync, NFS or a sync tool writes) is a file growing under watch's eyes:
// its old entry times do not make it history, and its runs are traced
// whole, once.
func TestSlowCopyTracesEveryRunWhole(t *testing.T) {
	h := newRealHarness(t, Config{})
	s := genSession(t, "slow", 600<<10, 1)
	for off := 0; off < len(s); off += 64 << 10 {
		h.appendTo("p/s.jsonl", s[off:min(off+64<<10, len(s))])
		h.later(50 * time.Millisecond)
	}
	h.finish()
	h.check(s)
}

// A file replaced under its name by a temporary file and a rename (the
// old bytes and more), while watch runs and while it is down: each run
// once.
func TestTempFileAndRenameTraceEachRunOnce(t *testing.T) {
	h := newRealHarness(t, Config{})
	s := genSessionAt(t, "tmp", 200<<10, 2, h.clk.t) // a live session
	third := len(s) / 3
	h.put("p/s.jsonl", cut(s, third))
	h.later(time.Minute)
	h.replaceByRename("p/s.jsonl", cut(s, 2*third))
	h.later(time.Minute)
	h.restart()
	h.replaceByRename("p/s.jsonl", s)
	h.restart()
	h.finish()
	h.check(s)
}

// Another session renamed over a followed file: the first session's
// open run is traced, the newcomer traced whole.
func TestAnotherSessionOverTheName(t *testing.T) {
	h := newRealHarness(t, Config{})
	a := genSessionAt(t, "a", 100<<10, 3, h.clk.t)
	b := genSessionAt(t, "b", 100<<10, 4, h.clk.t)
	h.put("p/a.jsonl", a)
	h.put("q/b.jsonl", b)
	h.later(time.Second)
	must(t, os.Rename(h.path("q/b.jsonl"), h.path("p/a.jsonl")))
	h.later(time.Second)
	h.finish()
	h.check(a, b)
}

// A backup folder (cp -a) under the watched root, made while watch runs
// and while it is down, and two snapshots of one session in one folder:
// the runs they share are traced once.
func TestCopiesAndSnapshotsTraceEachRunOnce(t *testing.T) {
	h := newRealHarness(t, Config{})
	s := genSessionAt(t, "bak", 300<<10, 5, h.clk.t) // a live session
	u := genSession(t, "other", 100<<10, 6)
	h.put("p/s.jsonl", cut(s, len(s)/2))
	h.put("p/u.jsonl", u)
	h.later(time.Minute)
	h.copyA("p/s.jsonl", "backup/p/s.jsonl")
	h.copyA("p/u.jsonl", "backup/p/u.jsonl")
	h.later(time.Minute)
	h.restart()
	h.copyA("p/s.jsonl", "backup2/p/s.jsonl")
	h.appendTo("p/s.jsonl", s[len(cut(s, len(s)/2)):])
	h.restart()
	h.finish()
	h.check(s, u)
}

// The history, two snapshots of one session side by side (the older one
// stops mid-run) and a copy, traced by --since all: each run once, whole,
// whichever file comes first.
func TestSnapshotsInHistory(t *testing.T) {
	s := genSession(t, "snap", 300<<10, 7)
	h := &realHarness{t: t, dir: t.TempDir(), state: filepath.Join(t.TempDir(), "watch.json"),
		clk: &clock{t: time.Now()}, exp: &exporter{accepted: map[string]int{}}, ids: spanid.NewGenerator(nil)}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(h.ids), sdktrace.WithSpanProcessor(h.exp))
	old := h.clk.t.Add(-48 * time.Hour)
	for name, b := range map[string][]byte{
		"p/a-snapshot.jsonl": s[:len(s)/2], // cut mid-line, mid-run
		"p/b-snapshot.jsonl": cut(s, len(s)/3),
		"p/c.jsonl":          s,
		"archive/c.jsonl":    s,
	} {
		p := h.path(name)
		must(t, os.WriteFile(p, b, 0o644))
		must(t, os.Chtimes(p, old, old))
	}
	h.start(Config{Since: SinceAll})
	h.finish()
	h.check(s)
}

// After a restart, a deleted session's inode reused by a new session is a
// new file: traced whole. A file moved to a new inode while watch is down
// traces nothing again.
func TestRestartThenInodeReuseAndMove(t *testing.T) {
	a := genSession(t, "a", 100<<10, 8)
	b := genSession(t, "b", 100<<10, 9)
	h := newRealHarness(t, Config{})
	h.put("p/a.jsonl", a)
	h.finish()
	must(t, h.f.stop())
	// Down: a is deleted, and b written where the state says a's inode is.
	must(t, os.Remove(h.path("p/a.jsonl")))
	pb := h.put("p/b.jsonl", b)
	s, _, err := LoadState(h.state)
	must(t, err)
	info, err := os.Stat(pb)
	must(t, err)
	id := identity(info)
	for i := range s.Files {
		s.Files[i].Dev, s.Files[i].Ino = id.dev, id.ino // as if b took a's inode
	}
	must(t, s.Save(h.state))
	// And a moved back in, under a new inode.
	h.put("archive/a.jsonl", a)
	h.start(Config{})
	h.finish()
	h.check(a, b)
}

// A file without a session header is traced as replay traces it, and
// said once; a file that is not a session at all is said once and left.
func TestHeaderlessFileTracedAsReplay(t *testing.T) {
	s := genSession(t, "nohdr", 100<<10, 10)
	_, body, _ := bytes.Cut(s, []byte("\n"))
	h := newRealHarness(t, Config{})
	h.put("p/s.jsonl", body)
	h.put("p/notes.jsonl", []byte("{\"hello\":1}\n"))
	h.finish()
	h.check(body)
	var said int
	for _, l := range h.logs {
		if bytes.Contains([]byte(l), []byte("no session header")) || bytes.Contains([]byte(l), []byte("not a Pi session file")) {
			said++
		}
	}
	if said != 2 {
		t.Errorf("logs %q: want one line for each file", h.logs)
	}
}

// A kill -9 before the first commit of a first start with --since all:
// the next start, without --since, goes on with the same scan, so the
// history is traced, once.
func TestKillBeforeTheFirstCommit(t *testing.T) {
	s := genSession(t, "hist", 200<<10, 11)
	h := &realHarness{t: t, dir: t.TempDir(), state: filepath.Join(t.TempDir(), "watch.json"),
		clk: &clock{t: time.Now()}, exp: &exporter{accepted: map[string]int{}}, ids: spanid.NewGenerator(nil)}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(h.ids), sdktrace.WithSpanProcessor(h.exp))
	old := h.clk.t.Add(-48 * time.Hour)
	p := h.path("p/s.jsonl")
	must(t, os.WriteFile(p, s, 0o644))
	must(t, os.Chtimes(p, old, old))
	// The first start dies as it begins to read: by then its bound and
	// scan marker must be in the state, before anything is exported.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var st State
	var first bool
	var loadErr error
	f := New(Config{Dirs: []string{h.dir}, StatePath: h.state, Since: SinceAll, Now: h.clk.now,
		Flush: func(context.Context, bool) error { return errors.New("killed") },
		NewTracer: func(TracerSpec) Tracer {
			st, first, loadErr = LoadState(h.state)
			cancel()
			return &fakeTracer{b: &book{}, open: -1}
		}})
	must(t, f.Run(ctx))
	must(t, loadErr)
	if !first || st.Scan == nil || st.Scan.Since != SinceAll.UnixNano() {
		t.Fatalf("state as the first file is read: %+v, first %v", st, first)
	}
	if len(h.exp.accepted) != 0 {
		t.Fatal("something was exported")
	}
	h.start(Config{}) // no --since
	h.finish()
	h.check(s)
}

// liveSession is a session file a test writes piece by piece.
type liveSession struct {
	full  []byte
	wrote int
	name  string
}

// writeRest writes what is left of each session.
func (h *realHarness) writeRest(ss []*liveSession) {
	for _, s := range ss {
		if s.wrote < len(s.full) {
			h.appendTo(s.name, s.full[s.wrote:])
		}
	}
}

// finishAndCheck ends watch and checks that every run of the sessions
// was traced once; a failure names the operations that led to it.
func (h *realHarness) finishAndCheck(ss []*liveSession, ops []string) {
	h.t.Helper()
	h.finish()
	var full [][]byte
	for _, s := range ss {
		full = append(full, s.full)
	}
	h.check(full...)
	if h.t.Failed() {
		h.t.Logf("operations: %v", ops)
	}
}

// Random interleavings of appends, renames, copies, temp-file updates,
// deletions of copies, restarts and kill -9 over a few sessions end with
// every run traced exactly once, as replay traces the sessions.
func TestRandomFileOperationsTraceEachRunOnce(t *testing.T) {
	rounds := 40
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(round), 99))
			h := newRealHarness(t, Config{})
			var ss []*liveSession
			for i := range 3 {
				// Written as Pi writes it: entries of now, appended as they
				// come, at any pace.
				s := genSessionAt(t, fmt.Sprintf("r%d-%d", round, i), int64(40<<10+rng.IntN(120<<10)), uint64(round*10+i), h.clk.t)
				ss = append(ss, &liveSession{full: s, name: fmt.Sprintf("p%d/s%d.jsonl", i%2, i)})
			}
			var copies []string
			var ops []string
			for step := 0; step < 60; step++ {
				s := ss[rng.IntN(len(ss))]
				switch op := rng.IntN(10); {
				case op < 4 && s.wrote < len(s.full): // append, maybe cutting a line
					n := min(len(s.full)-s.wrote, 1+rng.IntN(24<<10))
					h.appendTo(s.name, s.full[s.wrote:s.wrote+n])
					s.wrote += n
					ops = append(ops, "append")
				case op == 4 && s.wrote > 0: // rename or move
					to := fmt.Sprintf("p%d/m%d.jsonl", rng.IntN(3), step)
					must(t, os.Rename(h.path(s.name), h.path(to)))
					s.name = to
					ops = append(ops, "rename")
				case op == 5 && s.wrote > 0: // cp -a
					to := fmt.Sprintf("backup%d/c%d.jsonl", rng.IntN(2), step)
					h.copyA(s.name, to)
					copies = append(copies, to)
					ops = append(ops, "copy")
				case op == 6 && s.wrote > 0: // temp file and rename, with more
					n := min(len(s.full)-s.wrote, rng.IntN(16<<10))
					s.wrote += n
					h.replaceByRename(s.name, s.full[:s.wrote])
					ops = append(ops, "tmp+rename")
				case op == 7 && len(copies) > 0: // a copy deleted
					i := rng.IntN(len(copies))
					must(t, os.Remove(h.path(copies[i])))
					copies = slices.Delete(copies, i, i+1)
					ops = append(ops, "delete copy")
				case op == 8:
					h.restart()
					ops = append(ops, "restart")
				case op == 9 && rng.IntN(2) == 0:
					h.kill()
					ops = append(ops, "kill -9")
				}
				h.later(time.Duration(rng.IntN(3000)) * time.Millisecond)
			}
			h.writeRest(ss)
			h.step()
			h.finishAndCheck(ss, ops)
		})
	}
}

// A state that cannot be saved stops watch before it exports what it
// could not record: at the start, nothing is traced; later, nothing more
// is traced while it fails, what waited is traced once it can be saved,
// and five failures in a row end Run with ErrState.
func TestStateThatCannotBeSaved(t *testing.T) {
	f := New(Config{Dirs: []string{t.TempDir()}, StatePath: "/proc/pi-otel-no-such-dir/watch.json",
		NewTracer: func(TracerSpec) Tracer { t.Error("a tracer with no state"); return nil },
		Flush:     func(context.Context, bool) error { t.Error("flushed with no state"); return nil }})
	if err := f.Run(context.Background()); !errors.Is(err, ErrState) {
		t.Fatalf("Run: %v, want ErrState", err)
	}

	h := newRealHarness(t, Config{})
	a := genSessionAt(t, "a", 60<<10, 12, h.clk.t)
	h.put("p/a.jsonl", a)
	h.finish()
	before := len(h.exp.accepted)
	if before == 0 {
		t.Fatal("nothing traced")
	}
	dir := filepath.Dir(h.state)
	must(t, os.Rename(dir, dir+".away"))
	must(t, os.WriteFile(dir, nil, 0o600)) // the state's folder is a file now
	b := genSessionAt(t, "b", 60<<10, 13, h.clk.t)
	h.put("p/b.jsonl", b)
	h.finish() // b is exported, then its save fails
	if h.f.stats.StateFails == 0 {
		t.Fatal("no save failed")
	}
	exported := len(h.exp.accepted)
	c := genSessionAt(t, "c", 60<<10, 14, h.clk.t)
	h.put("p/c.jsonl", c)
	h.later(time.Second)
	h.later(3 * time.Second)
	if got := len(h.exp.accepted); got != exported {
		t.Errorf("%d spans exported while the state could not be saved", got-exported)
	}
	must(t, os.Remove(dir))
	must(t, os.Rename(dir+".away", dir))
	h.later(10 * time.Second)
	h.finish()
	if h.f.fatal != nil {
		t.Fatalf("gave up: %v", h.f.fatal)
	}
	h.check(a, b, c)
}

// BenchmarkSaveState saves the state of a large history: 5,000 sessions
// of 20 runs and their files, one run claimed since the last save.
func BenchmarkSaveState(b *testing.B) {
	f := New(Config{StatePath: filepath.Join(b.TempDir(), "watch.json")})
	for i := range 5000 {
		sid := fmt.Sprintf("019a%04d-0000-7000-8000-000000000000", i)
		for r := range 20 {
			f.ledger.Claim(sid, fmt.Sprintf("%s/%08x", sid, r), time.UnixMilli(int64(1_700_000_000_000+i*1000+r)))
		}
		fi := &file{path: fmt.Sprintf("/home/u/.pi/agent/sessions/--p%d--/%d.jsonl", i/50, i), id: fileID{1, uint64(i)}, session: sid, committed: 100_000, tailAt: 100_000}
		f.byID[fi.id] = fi
	}
	f.ledger.Commit()
	f.saveState()
	b.ResetTimer()
	for i := range b.N {
		f.ledger.Claim("019a0000-0000-7000-8000-000000000000", fmt.Sprintf("new/%d", i), time.UnixMilli(int64(i)))
		f.ledger.Commit()
		f.saveState()
	}
	b.StopTimer()
	st, err := os.Stat(f.cfg.StatePath)
	must(b, err)
	b.ReportMetric(float64(st.Size())/1e6, "state-MB")
}

// fileTracer is a FileMapper as a follower's Tracer: what is open at the
// end is closed as the input ending.
type fileTracer struct{ *session.FileMapper }

func (f fileTracer) Close(bool) { f.FileMapper.Close(agentmap.Ending{Reason: vocab.EndEOF}) }
