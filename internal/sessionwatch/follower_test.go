package sessionwatch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/ledger"
	"github.com/pi-otel/pi-otel/internal/readahead"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// The fake session format: one word per line. "H" is the header, "U" a
// user message that opens a run, "A" a final answer, "T" a tool call.
// A run is traced when the next one begins, on Idle after an "A", or on
// Close; the book records each traced run as path@offset.

type book struct {
	mu     sync.Mutex
	traced []string
	// accepted is what the fake exporter took; fail makes flushes fail.
	accepted []string
	fail     bool
	pending  []string
	// tracers are every tracer made; lineOnly makes them plain Tracers.
	tracers  []*fakeTracer
	lineOnly bool
}

func (b *book) count(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, k := range b.accepted {
		if k == key {
			n++
		}
	}
	return n
}

func (b *book) flush(_ context.Context, _ bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fail {
		b.pending = nil
		return errors.New("collector down")
	}
	b.accepted = append(b.accepted, b.pending...)
	b.pending = nil
	return nil
}

type fakeTracer struct {
	b         *book
	spec      TracerSpec
	lines     []string
	offs      []int64
	ends      []int64
	open      int // index of the open run's first line, or -1
	committed int64
	closed    bool
	ino       uint64
	ledger    *ledger.Ledger
}

// follow makes a follower of cfg whose tracers are the book's, claiming
// in a ledger of its own.
func (b *book) follow(cfg Config) *Follower {
	lg := ledger.New()
	cfg.Ledger = lg
	cfg.NewTracer = func(spec TracerSpec) Tracer { return b.tracer(spec, lg) }
	return New(cfg)
}

// claim is what the session pipeline does with a run a tracer completes
// (internal/app's fileTracer): a run before the place an older state left
// is recorded; any other is traced if it claims first (all, with no
// ledger).
func claim(lg *ledger.Ledger, spec TracerSpec, off int64, session, key string, start time.Time) (trace, count bool) {
	switch {
	case off < spec.SkipThrough:
		if lg != nil {
			lg.Traced(session, key, start)
		}
		return false, false
	case lg == nil:
		return true, true
	}
	return lg.Claim(session, key, start)
}

// claimIn is claim for session's FileMappers.
func claimIn(lg *ledger.Ledger, spec TracerSpec) func(*session.Run) {
	return func(r *session.Run) {
		if trace, count := claim(lg, spec, r.Off, r.Session, r.Key, r.Start); trace {
			r.Trace(!count)
		}
	}
}

func (b *book) tracer(spec TracerSpec, lg *ledger.Ledger) Tracer {
	t := &fakeTracer{b: b, spec: spec, open: -1, ledger: lg}
	// The fake format has no session ids: a run's key is the file's inode
	// and the run's offset, the same under any name and after a restart.
	if st, err := os.Stat(spec.Path); err == nil {
		t.ino = identity(st).ino
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tracers = append(b.tracers, t)
	if b.lineOnly {
		return lineOnly{t}
	}
	return t
}

// lineOnly hides a tracer's Predecode: the follower feeds it line by line.
type lineOnly struct{ Tracer }

func (t *fakeTracer) Line(off int64, l []byte) { t.add(off, string(l)) }

// Predecode makes the fake a Predecoder, as the real tracer is: its
// "decoding" is the copy of the line.
func (t *fakeTracer) Predecode() func(off int64, b []byte) func() {
	return func(off int64, b []byte) func() {
		s := string(b)
		return func() { t.add(off, s) }
	}
}

func (t *fakeTracer) add(off int64, s string) {
	if t.closed {
		panic("Line after Close")
	}
	if s == "U" && t.open >= 0 {
		t.trace()
	}
	t.lines = append(t.lines, s)
	t.offs = append(t.offs, off)
	t.ends = append(t.ends, off+int64(len(s))+1)
	if s == "U" {
		t.open = len(t.lines) - 1
	}
}

func (t *fakeTracer) trace() {
	start, end := t.offs[t.open], t.ends[len(t.ends)-1]
	t.open = -1
	key := fmt.Sprintf("%d@%d", t.ino, start)
	if traced, _ := claim(t.ledger, t.spec, start, "", key, time.Time{}); traced {
		key := fmt.Sprintf("%s@%d", filepath.Base(t.spec.Path), start)
		t.b.mu.Lock()
		t.b.traced = append(t.b.traced, key)
		t.b.pending = append(t.b.pending, key)
		t.b.mu.Unlock()
	}
	t.committed = end
}

func (t *fakeTracer) Idle(time.Time, time.Duration) bool {
	if t.open >= 0 && t.lines[len(t.lines)-1] == "A" {
		t.trace()
		return true
	}
	return false
}

func (t *fakeTracer) Close(bool) {
	if t.open >= 0 {
		t.trace()
	}
	t.closed = true
}

func (t *fakeTracer) Committed() int64 { return t.committed }

// LastEntry: the fake format has no times; the file's mtime rules.
func (t *fakeTracer) LastEntry() time.Time { return time.Time{} }

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

type harness struct {
	t     *testing.T
	dir   string
	state string
	b     *book
	clk   *clock
	f     *Follower
}

func newHarness(t *testing.T, cfg Config) *harness {
	h := &harness{t: t, dir: t.TempDir(), b: &book{}, clk: &clock{t: time.Now()}}
	if cfg.StatePath == "" {
		h.state = filepath.Join(t.TempDir(), "state", "watch.json")
		cfg.StatePath = h.state
	} else {
		h.state = cfg.StatePath
	}
	h.start(cfg)
	return h
}

// start builds a follower and does what Run does before its loop,
// without inotify: tests drive it with step.
func (h *harness) start(cfg Config) {
	cfg.Dirs = []string{h.dir}
	cfg.Flush = h.b.flush
	cfg.Now = h.clk.now
	cfg.IsSession = func(first []byte) bool { return string(first) == "H" }
	cfg.Settle = 10 * time.Second
	cfg.CloseAfter = time.Hour
	h.f = h.b.follow(cfg)
	if err := h.f.load(); err != nil {
		h.t.Fatal(err)
	}
	h.f.scan(true)
	h.f.state.Scan = nil
	h.f.saveState()
	h.f.work(context.Background())
}

// step is one turn of Run's loop after something changed.
func (h *harness) step() {
	h.f.scan(false)
	h.f.work(context.Background())
}

// later moves the clock and the files' modification times' reference.
func (h *harness) later(d time.Duration) {
	h.clk.t = h.clk.t.Add(d)
	h.step()
}

func (h *harness) write(name, content string) string {
	p := filepath.Join(h.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	fh, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := fh.WriteString(content); err != nil {
		h.t.Fatal(err)
	}
	fh.Close()
	// The follower measures quiet from the file's modification time.
	if err := os.Chtimes(p, h.clk.t, h.clk.t); err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) want(key string, n int) {
	h.t.Helper()
	if got := h.b.count(key); got != n {
		h.t.Errorf("%s accepted %d times, want %d (traced: %v)", key, got, n, h.b.traced)
	}
}

func TestNewFileRunsTracedOnNextRunAndSettle(t *testing.T) {
	h := newHarness(t, Config{})
	h.write("p/s.jsonl", "H\nU\nT\n")
	h.step()
	h.want("s.jsonl@2", 0) // still open
	h.write("p/s.jsonl", "A\nU\n")
	h.step()
	h.want("s.jsonl@2", 1) // the next run began
	h.write("p/s.jsonl", "A\n")
	h.step()
	h.want("s.jsonl@8", 0)
	h.later(11 * time.Second)
	h.want("s.jsonl@8", 1) // settled
	h.later(time.Minute)
	h.want("s.jsonl@8", 1)
}

func TestHalfWrittenLineWaits(t *testing.T) {
	h := newHarness(t, Config{})
	h.write("s.jsonl", "H\nU\nA\nU")
	h.step()
	h.want("s.jsonl@2", 0) // "U" without its LF is not a line yet
	h.write("s.jsonl", "\n")
	h.step()
	h.want("s.jsonl@2", 1)
}

func TestHistoryIsSkippedByDefault(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.jsonl")
	if err := os.WriteFile(old, []byte("H\nU\nA\nU\nA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, b: &book{}, clk: &clock{t: time.Now()}}
	h.state = filepath.Join(t.TempDir(), "w.json")
	h.start(Config{StatePath: h.state})
	h.later(time.Minute)
	h.want("old.jsonl@2", 0)
	h.want("old.jsonl@6", 0)
	// New activity in an old file is traced.
	h.write("old.jsonl", "U\nA\n")
	h.later(time.Minute)
	h.want("old.jsonl@10", 1)
	if len(h.b.accepted) != 1 {
		t.Errorf("accepted %v, want only the new run", h.b.accepted)
	}
}

func TestSinceAllTracesHistoryAndCloses(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte("H\nU\nA\nU\nT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-48 * time.Hour)
	_ = os.Chtimes(filepath.Join(dir, "a.jsonl"), past, past)
	h := &harness{t: t, dir: dir, b: &book{}, clk: &clock{t: time.Now()}}
	h.state = filepath.Join(t.TempDir(), "w.json")
	h.start(Config{StatePath: h.state, Since: SinceAll})
	h.want("a.jsonl@2", 1)
	h.want("a.jsonl@6", 1) // killed mid-tool, quiet for two days: closed
	if s := h.f.Stats(); s.Tracers != 0 {
		t.Errorf("%d tracers alive for a quiet file, want 0", s.Tracers)
	}
}

func TestSinceDurationSkipsOlderFiles(t *testing.T) {
	dir := t.TempDir()
	for name, age := range map[string]time.Duration{"old.jsonl": 72 * time.Hour, "new.jsonl": time.Hour} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("H\nU\nA\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		_ = os.Chtimes(p, at, at)
	}
	h := &harness{t: t, dir: dir, b: &book{}, clk: &clock{t: time.Now()}}
	h.state = filepath.Join(t.TempDir(), "w.json")
	h.start(Config{StatePath: h.state, Since: time.Now().Add(-24 * time.Hour)})
	h.want("old.jsonl@2", 0)
	h.want("new.jsonl@2", 1)
}

func TestRestartTracesNothingTwiceAndCatchesUp(t *testing.T) {
	h := newHarness(t, Config{})
	h.write("p/s.jsonl", "H\nU\nA\nU\nT\n")
	h.later(time.Minute)
	h.want("s.jsonl@2", 1)
	// Stop (no Ending: the open run stays open), write while down, restart.
	_ = h.f.stop()
	h.write("p/s.jsonl", "A\nU\nA\n")
	h.write("q/new.jsonl", "H\nU\nA\n")
	h.start(Config{StatePath: h.state})
	h.later(time.Minute)
	h.want("s.jsonl@2", 1)
	h.want("s.jsonl@6", 1)
	h.want("s.jsonl@12", 1)
	h.want("new.jsonl@2", 1)
}

func TestFailedExportIsRetriedFromTheCommittedPlace(t *testing.T) {
	h := newHarness(t, Config{})
	h.b.fail = true
	h.write("s.jsonl", "H\nU\nA\nU\n")
	h.step()
	h.want("s.jsonl@2", 0)
	if st, _, _ := LoadState(h.state); st.file(filepath.Join(h.dir, "s.jsonl")).Committed != 0 {
		t.Fatalf("the state moved past a run the exporter refused: %+v", st.Files)
	}
	h.b.fail = false
	h.later(time.Second) // before the retry: nothing yet
	h.want("s.jsonl@2", 0)
	h.later(10 * time.Second)
	h.want("s.jsonl@2", 1)
	if st, _, _ := LoadState(h.state); st.file(filepath.Join(h.dir, "s.jsonl")).Committed != 6 {
		t.Fatalf("state %+v, want committed 6", st.Files)
	}
}

func TestTruncatedFileIsReadAgain(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.write("s.jsonl", "H\nU\nA\nU\nA\n")
	h.later(time.Minute)
	h.want("s.jsonl@6", 1)
	// Rewritten in place, shorter, as a migration might: only runs begun
	// after the last commit count.
	if err := os.WriteFile(p, []byte("H\nU\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.clk.t = h.clk.t.Add(time.Minute)
	_ = os.Chtimes(p, h.clk.t, h.clk.t)
	h.step()
	h.write("s.jsonl", "A\nU\nA\n")
	h.later(time.Minute)
	if n := len(h.b.traced); n == 0 {
		t.Fatal("nothing traced after the rewrite")
	}
	if h.f.files[p].committed != int64(len("H\nU\nA\nU\nA\n")) {
		t.Errorf("committed %d after the rewrite", h.f.files[p].committed)
	}
}

func TestDeletedFileIsClosedAndForgotten(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.write("s.jsonl", "H\nU\nT\n")
	h.step()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	h.step()
	h.want("s.jsonl@2", 1) // closed: nothing more can come
	st, _, err := LoadState(h.state)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.File(p); ok {
		t.Error("a deleted file is still in the state")
	}
}

func TestNotASessionFileIsIgnored(t *testing.T) {
	h := newHarness(t, Config{})
	h.write("x.jsonl", "{\"type\":\"agent_start\"}\nU\nA\nU\n")
	h.later(time.Minute)
	if len(h.b.traced) != 0 {
		t.Errorf("traced %v from a file that is not a session", h.b.traced)
	}
}

func TestAcceptFiltersFiles(t *testing.T) {
	h := newHarness(t, Config{Accept: func(p string) (bool, bool) {
		return strings.Contains(p, "mine"), true
	}, StatePath: filepath.Join(t.TempDir(), "s.json")})
	h.write("mine.jsonl", "H\nU\nA\nU\n")
	h.write("theirs.jsonl", "H\nU\nA\nU\n")
	h.step()
	h.want("mine.jsonl@2", 1)
	h.want("theirs.jsonl@2", 0)
}

func TestExitedClosesOpenRunsAtStop(t *testing.T) {
	h := newHarness(t, Config{})
	h.f.cfg.Exited = func() bool { return true }
	h.write("s.jsonl", "H\nU\nT\n")
	h.step()
	h.write("s.jsonl", "T\n") // written just before Pi exited
	_ = h.f.stop()
	h.want("s.jsonl@2", 1)
}

func TestQuietTracersAreDropped(t *testing.T) {
	h := newHarness(t, Config{})
	for i := range 50 {
		h.write(fmt.Sprintf("p%d/s.jsonl", i), "H\nU\nA\n")
	}
	h.step()
	if s := h.f.Stats(); s.Tracers != 50 {
		t.Fatalf("%d tracers, want 50 while active", s.Tracers)
	}
	h.later(2 * time.Hour)
	if s := h.f.Stats(); s.Tracers != 0 || s.Files != 50 {
		t.Fatalf("stats %+v: want 50 files and no tracer once quiet", s)
	}
	// Growth builds the tracer again, skipping what was traced.
	h.write("p3/s.jsonl", "U\nA\n")
	h.later(time.Minute)
	h.want("s.jsonl@6", 1)
	h.want("s.jsonl@2", 50)
}

func TestStateFileIsPrivateAndAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "watch.json")
	st := State{Files: []FileState{{Path: "/a.jsonl", Dev: 1, Ino: 2, Committed: 3}}}
	if err := st.Save(p); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(p)); di.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, want 0700", di.Mode().Perm())
	}
	got, first, err := LoadState(p)
	if err != nil || first || got.file("/a.jsonl").Committed != 3 {
		t.Fatalf("LoadState = %+v, %v, %v", got, first, err)
	}
	// No temporary file is left behind, and a second save replaces the
	// first whole.
	st.Files = append(st.Files, FileState{Path: "/b.jsonl", Committed: 9})
	if err := st.Save(p); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("state dir holds %d entries, want only the state file", len(ents))
	}
	// A damaged state is an error, not a silent fresh start.
	if err := os.WriteFile(p, []byte("{\"version\":2,\"files\":["), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadState(p); err == nil {
		t.Error("a damaged state file loaded without error")
	}
}

func TestRunFollowsWithInotify(t *testing.T) {
	dir := t.TempDir()
	statePath := filepath.Join(t.TempDir(), "w.json")
	b := &book{}
	var mu sync.Mutex
	var logs []string
	ready, scanned := firstScan()
	f := b.follow(Config{
		Dirs:      []string{dir},
		Flush:     b.flush,
		StatePath: statePath,
		Settle:    time.Millisecond,
		Ready:     ready,
		Logf: func(format string, a ...any) {
			mu.Lock()
			logs = append(logs, fmt.Sprintf(format, a...))
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	// A project folder created after the first scan, then a session in
	// it: new activity. (The state file is no sign of that scan: it is
	// saved before, with the scan's marker.)
	waitFor(t, scanned)
	if err := os.MkdirAll(filepath.Join(dir, "--proj--"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "--proj--", "s.jsonl")
	if err := os.WriteFile(p, []byte("H\nU\nA\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return b.count("s.jsonl@2") == 1 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The one line: the root held nothing at the start.
	if want := "no session file in " + dir + " yet; new ones will be followed"; len(logs) != 1 || logs[0] != want {
		t.Errorf("log lines %q, want only %q", logs, want)
	}
}

// firstScan returns a Config.Ready, and a condition that holds once it
// was called: the first scan is done, and what changes after is new
// activity.
func firstScan() (ready func(), done func() bool) {
	var d atomic.Bool
	return func() { d.Store(true) }, d.Load
}

// waitFor waits for cond, guarding against a hang; it asserts nothing
// about how long it took.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	wait.For(t, 30*time.Second, cond, func() string { return "condition never became true" })
}

func TestGrowthAfterAbandonIsNotLost(t *testing.T) {
	h := newHarness(t, Config{})
	h.write("s.jsonl", "H\nU\nT\n")
	h.step()
	h.b.fail = true // the close's flush fails, so the closed tracer lingers
	h.later(2 * time.Hour)
	h.b.fail = false
	h.write("s.jsonl", "U\nA\n") // Pi resumed the session
	h.later(time.Minute)
	h.later(time.Minute)
	h.want("s.jsonl@2", 1)
	h.want("s.jsonl@6", 1)
}

func TestIsPiCommand(t *testing.T) {
	for argv, want := range map[string]bool{
		"pi":                              true,
		"/home/u/.npm/bin/pi --mode json": true,
		"node /x/node_modules/@earendil-works/pi-coding-agent/dist/cli.js": true,
		"node /x/node_modules/.bin/pi":                                     true,
		"cat pi":                                                           false,
		"sh -c pi":                                                         false,
		"pi-otel run -- pi":                                                false,
		"node server.js":                                                   false,
	} {
		if got := IsPiCommand(strings.Fields(argv)); got != want {
			t.Errorf("IsPiCommand(%q) = %v, want %v", argv, got, want)
		}
	}
}

func TestFileRewrittenWhileDown(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.write("s.jsonl", "H\nU\nA\nU\nA\n")
	h.later(time.Minute)
	h.want("s.jsonl@6", 1)
	_ = h.f.stop()
	// Shorter than the committed place, same inode: rewritten in place.
	h.clk.t = h.clk.t.Add(time.Hour)
	must(t, os.WriteFile(p, []byte("H\nU\nA\n"), 0o644))
	_ = os.Chtimes(p, h.clk.t, h.clk.t)
	h.start(Config{StatePath: h.state})
	h.write("s.jsonl", "U\nA\n") // a run begun after the rewrite
	h.later(time.Minute)
	if h.f.files[p].tr == nil && h.f.files[p].committed == 0 {
		t.Fatal("the rewritten file was never read")
	}
	if h.f.files[p].committed != int64(len("H\nU\nA\nU\nA\n")) {
		t.Errorf("committed %d: the run begun after the rewrite was not traced", h.f.files[p].committed)
	}
}

func TestLongLineIsReadWhole(t *testing.T) {
	h := newHarness(t, Config{})
	long := "X" + strings.Repeat("y", 3<<20) // longer than the read buffer
	h.write("s.jsonl", "H\nU\n"+long[:1<<20])
	h.step() // a part of the line: nothing fed yet
	h.write("s.jsonl", long[1<<20:]+"\nA\nU\n")
	h.step()
	h.want("s.jsonl@2", 1)
	// Its buffer is let go (framing's TestResetAtLetsGoOfAGrownBuffer).
	if len(h.f.readers) == 0 {
		t.Error("no reader kept for the next read")
	}
}

// file is the place of the file at path, zero if none.
func (st State) file(path string) FileState {
	f, _ := st.File(path)
	return f
}

// A huge line costs about its own size to read, however it arrives: not
// at all while it is still being written, then one buffer of its length.
// (The fake tracer keeps a copy of every line: one more of its size.)
func TestHugeLineIsReadIntoOneBuffer(t *testing.T) {
	h := newHarness(t, Config{})
	huge := strings.Repeat("x", 6<<20)
	h.write("s.jsonl", "H\nU\n"+huge[:4<<20])
	alloc := func(step func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		step()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	if n := alloc(h.step); n > 1<<20 {
		t.Errorf("reading 4 MiB of a line still being written allocated %d bytes", n)
	}
	h.write("s.jsonl", huge[4<<20:]+"\nA\nU\n")
	n := alloc(h.step)
	t.Logf("reading a %d-byte line allocated %d bytes (%.2fx)", len(huge), n, float64(n)/float64(len(huge)))
	if limit := uint64(len(huge)) * 5 / 2; n > limit {
		t.Errorf("reading a %d-byte line allocated %d bytes, want at most %d", len(huge), n, limit)
	}
	h.want("s.jsonl@2", 1)
	// The next run starts where the huge line, read whole, ended.
	h.write("s.jsonl", "A\n")
	h.later(11 * time.Second)
	h.want(fmt.Sprintf("s.jsonl@%d", 4+len(huge)+1+2), 1)
}

// Read ahead (decoding on the reading goroutine) and line by line give a
// tracer the same lines at the same offsets: many lines, batches cut by
// count and by size, a huge line, blank lines and CRLF, and a last line
// still being written.
func TestReadAheadFeedsAsLineByLine(t *testing.T) {
	var content strings.Builder
	content.WriteString("H\n")
	for i := range 3000 {
		switch {
		case i%500 == 7:
			content.WriteString("U\n" + strings.Repeat("t", readahead.HugeLine+i) + "\n")
		case i%97 == 3:
			content.WriteString("\r\n\n")
		case i%50 == 0:
			content.WriteString("U\r\n")
		case i%10 == 9:
			content.WriteString("A\n")
		default:
			content.WriteString("T" + strings.Repeat("z", i%300) + "\n")
		}
	}
	content.WriteString("U\nA") // no LF yet
	var fed [2][]string
	for i, lineOnly := range []bool{false, true} {
		h := &harness{t: t, dir: t.TempDir(), b: &book{lineOnly: lineOnly}, clk: &clock{t: time.Now()}}
		h.state = filepath.Join(t.TempDir(), "w.json")
		h.write("p/s.jsonl", content.String())
		h.start(Config{StatePath: h.state, Since: time.Now().Add(-time.Hour)})
		h.step()
		if len(h.b.tracers) != 1 {
			t.Fatalf("%d tracers, want 1", len(h.b.tracers))
		}
		tr := h.b.tracers[0]
		for j, l := range tr.lines {
			fed[i] = append(fed[i], fmt.Sprintf("%d:%d:%.12s", tr.offs[j], len(l), l))
		}
		if got, want := h.f.files[filepath.Join(h.dir, "p", "s.jsonl")].readOff, int64(content.Len()-len("A")); got != want {
			t.Errorf("lineOnly=%v: read to %d, want %d (all but the line being written)", lineOnly, got, want)
		}
	}
	if len(fed[0]) < 3000 {
		t.Fatalf("read ahead fed %d lines", len(fed[0]))
	}
	if !slices.Equal(fed[0], fed[1]) {
		t.Errorf("read ahead fed %d lines, line by line %d; they differ", len(fed[0]), len(fed[1]))
	}
}
