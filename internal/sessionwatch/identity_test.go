package sessionwatch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// A file renamed, or moved with its folder into archive/, keeps its place
// while watch runs and across a restart: nothing is traced again, and
// what is appended after the move is traced once.
func TestRenameAndMoveTraceNothingAgain(t *testing.T) {
	h := newHarness(t, Config{})
	h.write("p/s.jsonl", "H\nU\nA\nU\nA\n")
	h.later(time.Minute)
	h.want("s.jsonl@2", 1)
	h.want("s.jsonl@6", 1)

	// Renamed while watched.
	must(t, os.Rename(filepath.Join(h.dir, "p/s.jsonl"), filepath.Join(h.dir, "p/t.jsonl")))
	h.later(time.Minute)
	// Moved with its folder, while watched.
	must(t, os.MkdirAll(filepath.Join(h.dir, "archive"), 0o755))
	must(t, os.Rename(filepath.Join(h.dir, "p"), filepath.Join(h.dir, "archive/p")))
	h.later(time.Minute)
	if len(h.b.traced) != 2 {
		t.Fatalf("traced %v after moves, want the two runs once", h.b.traced)
	}
	st, _, err := LoadState(h.state)
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(h.dir, "archive/p/t.jsonl")
	if fs, ok := st.File(moved); !ok || fs.Committed != 10 {
		t.Fatalf("state %+v: want %s at 10", st.Files, moved)
	}

	// Moved back while down, then restarted.
	_ = h.f.stop()
	must(t, os.Rename(filepath.Join(h.dir, "archive/p"), filepath.Join(h.dir, "q")))
	h.start(Config{StatePath: h.state})
	h.later(time.Minute)
	if len(h.b.traced) != 2 {
		t.Fatalf("traced %v after a move while down, want nothing new", h.b.traced)
	}
	h.write("q/t.jsonl", "U\nA\n")
	h.later(time.Minute)
	h.want("t.jsonl@10", 1)
	if len(h.b.traced) != 3 {
		t.Errorf("traced %v, want only the new run after the moves", h.b.traced)
	}
}

// A file under two names (a hard link, or two roots that overlap) is one
// file: followed and traced once.
func TestSecondNameIsOneFile(t *testing.T) {
	h := newHarness(t, Config{})
	p := h.write("p/s.jsonl", "H\nU\nA\nU\n")
	must(t, os.MkdirAll(filepath.Join(h.dir, "other"), 0o755))
	must(t, os.Link(p, filepath.Join(h.dir, "other/link.jsonl")))
	h.later(time.Minute)
	h.write("p/s.jsonl", "A\n")
	h.later(time.Minute)
	if len(h.b.traced) != 2 {
		t.Errorf("traced %v, want each run once", h.b.traced)
	}
	if s := h.f.Stats(); s.Files != 1 {
		t.Errorf("%d files followed, want 1", s.Files)
	}
}

// A rename seen through inotify: the file is found under its new name
// (in a folder created by the move) before it would be closed as gone,
// so its open run stays open and is traced once, complete.
func TestRunFollowsAMoveWithInotify(t *testing.T) {
	dir := t.TempDir()
	statePath := filepath.Join(t.TempDir(), "w.json")
	b := &book{}
	ready, scanned := firstScan()
	// The follower's clock runs with the real one until the test moves it
	// on past the grace, instead of waiting for the grace to pass.
	var ahead atomic.Int64
	f := b.follow(Config{
		Dirs:      []string{dir},
		Flush:     b.flush,
		StatePath: statePath,
		Settle:    time.Hour,
		Ready:     ready,
		Now:       func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) },
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	waitFor(t, scanned)
	must(t, os.MkdirAll(filepath.Join(dir, "p"), 0o755))
	p := filepath.Join(dir, "p", "s.jsonl")
	must(t, os.WriteFile(p, []byte("H\nU\nA\nU\nT\n"), 0o644))
	waitFor(t, func() bool { return b.count("s.jsonl@2") == 1 })
	must(t, os.MkdirAll(filepath.Join(dir, "archive"), 0o755))
	must(t, os.Rename(filepath.Join(dir, "p"), filepath.Join(dir, "archive", "p")))
	// Pi goes on writing the moved file: the open run continues.
	fh, err := os.OpenFile(filepath.Join(dir, "archive", "p", "s.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = fh.WriteString("A\nU\n")
	must(t, err)
	must(t, fh.Close())
	waitFor(t, func() bool { return b.count("s.jsonl@6") == 1 })
	// Past the grace, it must not be closed as gone. A run in another
	// file, traced after the clock moved, shows the follower has done its
	// work at the new time, closing what was due.
	ahead.Store(int64(3 * missingGrace))
	must(t, os.MkdirAll(filepath.Join(dir, "other"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "other", "u.jsonl"), []byte("H\nU\nA\nU\nT\n"), 0o644))
	waitFor(t, func() bool { return b.count("u.jsonl@2") == 1 })
	cancel()
	must(t, <-done)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.accepted = slices.DeleteFunc(b.accepted, func(k string) bool { return strings.HasPrefix(k, "u.jsonl") })
	if len(b.accepted) != 2 {
		t.Errorf("accepted %v, want s.jsonl@2 and s.jsonl@6 once each (the run open at the move was not cut)", b.accepted)
	}
}

// A folder moved within the tree keeps its inotify watch, which fsnotify
// knows by the old name: it drops the watch once it reads the move, and
// names a moved subfolder's events by its old path. The follower may look
// at the new name before fsnotify has read the move (here it has not: the
// move's first event waits for a reader). Growth under the new names must
// still come as events under those names, not wait for the next full
// scan.
func TestMovedFolderIsWatchedUnderItsNewName(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "p", "sub"), 0o755))
	w, err := fsnotify.NewWatcher()
	must(t, err)
	defer w.Close()
	f := (&book{}).follow(Config{Dirs: []string{dir}})
	f.watcher = w
	f.walk(dir, false)
	must(t, os.Rename(filepath.Join(dir, "p"), filepath.Join(dir, "q")))
	f.walk(filepath.Join(dir, "q"), false)
	want := map[string]bool{filepath.Join(dir, "q", "a.txt"): true, filepath.Join(dir, "q", "sub", "b.txt"): true}
	for p := range want {
		must(t, os.WriteFile(p, []byte("x\n"), 0o644))
	}
	var got []fsnotify.Event
	deadline := time.After(30 * time.Second) // a hang guard: the writes are done
	for len(want) > 0 {
		select {
		case ev := <-w.Events:
			got = append(got, ev)
			if ev.Has(fsnotify.Write) {
				delete(want, ev.Name)
			}
		case err := <-w.Errors:
			t.Fatal(err)
		case <-deadline:
			t.Fatalf("no write event for %v; events: %v", want, got)
		}
	}
}

// A state that cannot be saved is tried again, counted, and ends the
// follower with an error once it keeps failing: every later start would
// trace again what was exported.
func TestUnsavedStateEndsTheFollower(t *testing.T) {
	h := newHarness(t, Config{})
	h.write("s.jsonl", "H\nU\nA\nU\n")
	h.step()
	h.want("s.jsonl@2", 1)
	// The state's folder becomes a file: no save can succeed (as root,
	// permissions would not stop one).
	dir := filepath.Dir(h.state)
	must(t, os.RemoveAll(dir))
	must(t, os.WriteFile(dir, nil, 0o600))
	h.write("s.jsonl", "A\nU\n")
	h.step()
	if h.f.fatal != nil || h.f.Stats().StateFails != 1 {
		t.Fatalf("after one failed save: fatal %v, %d failures counted", h.f.fatal, h.f.Stats().StateFails)
	}
	for i := 0; i < 6 && h.f.fatal == nil; i++ {
		h.later(time.Duration(1<<i) * time.Second)
	}
	if h.f.fatal == nil {
		t.Fatalf("still running after %d failed saves", h.f.Stats().StateFails)
	}
	if err := h.f.stop(); err == nil {
		t.Error("stop reported no error for a state never saved")
	}
	if n := h.f.Stats().StateFails; n != maxSaveFails {
		t.Errorf("%d failed saves counted, want %d", n, maxSaveFails)
	}
}

// A save that fails once and then succeeds changes nothing.
func TestStateSaveRecovers(t *testing.T) {
	h := newHarness(t, Config{})
	h.write("s.jsonl", "H\nU\nA\nU\n")
	h.step()
	dir := filepath.Dir(h.state)
	must(t, os.RemoveAll(dir))
	must(t, os.WriteFile(dir, nil, 0o600))
	h.write("s.jsonl", "A\nU\n")
	h.step()
	must(t, os.Remove(dir))
	h.later(2 * time.Second)
	if h.f.fatal != nil {
		t.Fatal(h.f.fatal)
	}
	st, _, err := LoadState(h.state)
	must(t, err)
	if fs, _ := st.File(filepath.Join(h.dir, "s.jsonl")); fs.Committed != 10 {
		t.Errorf("state %+v after the retry, want committed 10", st.Files)
	}
}
