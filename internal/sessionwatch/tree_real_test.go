package sessionwatch

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/ledger"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// copyTree copies the folder from to to as cp -r does: new files, new
// times, written in pieces.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	must(t, filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fh, err := os.Create(dst)
		if err != nil {
			return err
		}
		defer fh.Close()
		for off := 0; off < len(b); off += 4096 {
			if _, err := fh.Write(b[off:min(off+4096, len(b))]); err != nil {
				return err
			}
		}
		return nil
	}))
}

func fds(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(es)
}

// A history of hundreds of sessions in per-cwd folders, backfilled with
// --since all by Run (inotify) while the tree is worked on as users do:
// a whole project folder copied into a backup folder inside the root, a
// folder moved, a folder linked in from outside, hard links, temp files
// renamed over sessions, live sessions written with half lines and
// finished after a restart, a file overwritten in place. Whatever the
// interleaving, every run is traced once, as replay traces the sessions;
// no descriptor or goroutine is left behind.
func TestTreeOperationsDuringBackfill(t *testing.T) {
	h := &realHarness{t: t, dir: t.TempDir(), state: filepath.Join(t.TempDir(), "watch.json"),
		clk: &clock{t: time.Now()}, exp: &exporter{accepted: map[string]int{}}, ids: spanid.NewGenerator(nil)}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(h.ids), sdktrace.WithSpanProcessor(h.exp))
	var all [][]byte
	old := time.Now().Add(-48 * time.Hour)
	for i := range 240 {
		s := genSession(t, fmt.Sprintf("h%03d", i), int64(8<<10+i*97%(24<<10)), uint64(100+i))
		p := h.path(fmt.Sprintf("--home-u-proj%02d--/%03d.jsonl", i%24, i))
		must(t, os.WriteFile(p, s, 0o644))
		must(t, os.Chtimes(p, old, old))
		all = append(all, s)
	}
	outside := t.TempDir()
	var linked [][]byte
	for i := range 10 {
		s := genSession(t, fmt.Sprintf("o%02d", i), 12<<10, uint64(400+i))
		must(t, os.WriteFile(filepath.Join(outside, fmt.Sprintf("%02d.jsonl", i)), s, 0o644))
		linked = append(linked, s)
	}
	live := []struct {
		name string
		b    []byte
	}{
		{"--home-u-live--/a.jsonl", genSessionAt(t, "live-a", 40<<10, 500, time.Now())},
		{"--home-u-live--/b.jsonl", genSessionAt(t, "live-b", 40<<10, 501, time.Now())},
	}
	fdsBefore, goBefore := fds(t), runtime.NumGoroutine()

	var traced atomic.Int64
	cfg := Config{Dirs: []string{h.dir}, StatePath: h.state, Since: SinceAll, Flush: h.exp.flush,
		IsSession: session.Starts, CommitEvery: time.Millisecond,
		Ledger: ledger.New()}
	cfg.NewTracer = func(spec TracerSpec) Tracer {
		traced.Add(1)
		return fileTracer{session.New(session.Config{TracerProvider: h.tp, Runs: claimIn(cfg.Ledger, spec)})}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(cfg).Run(ctx) }()
	waitFor(t, func() bool { return traced.Load() > 20 }) // mid-backfill

	copyTree(t, h.path("--home-u-proj03--"), h.path("backup/--home-u-proj03--"))
	must(t, os.Rename(h.path("--home-u-proj04--"), h.path("archive/--home-u-proj04--")))
	must(t, os.Symlink(outside, h.path("--home-u-linked--")))
	must(t, os.Link(h.path("--home-u-proj05--/005.jsonl"), h.path("hard/005.jsonl")))
	must(t, os.Remove(h.path("--home-u-proj05--/005.jsonl"))) // only the link is left
	b, err := os.ReadFile(h.path("--home-u-proj06--/006.jsonl"))
	must(t, err)
	tmp := h.path("--home-u-proj06--/.006.jsonl.tmp")
	must(t, os.WriteFile(tmp, b, 0o644))
	must(t, os.Rename(tmp, h.path("--home-u-proj06--/006.jsonl")))
	// Another session written over a history file in place.
	over := genSession(t, "over", 60<<10, 600)
	must(t, os.WriteFile(h.path("--home-u-proj07--/007.jsonl"), over, 0o644))
	all[7] = over
	for _, l := range live {
		h.appendTo(l.name, l.b[:len(l.b)/2]) // a half line, most likely
	}
	waitFor(t, func() bool { return traced.Load() >= 240 })
	cancel()
	must(t, <-done)

	// After the restart, the live sessions are finished.
	for _, l := range live {
		h.appendTo(l.name, l.b[len(l.b)/2:])
		all = append(all, l.b)
	}
	h.clk.t = time.Now()
	h.start(Config{})
	h.finish()
	must(t, h.f.stop())
	h.check(append(all, linked...)...)

	if n := fds(t); n > fdsBefore {
		t.Errorf("%d descriptors open, %d before", n, fdsBefore)
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= goBefore })
}

// inotifyWatches counts the inotify watches this process holds.
func inotifyWatches(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fdinfo")
	if err != nil {
		t.Skip("no /proc/self/fdinfo")
	}
	n := 0
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			continue
		}
		n += strings.Count(string(b), "inotify wd:")
	}
	return n
}

// Project folders that come and go (created with a session, removed,
// moved out of the root, moved in) leave one inotify watch per folder in
// the tree, and no descriptor open.
func TestFoldersComingAndGoingLeaveNoWatch(t *testing.T) {
	dir, away := t.TempDir(), t.TempDir()
	s := genSession(t, "w", 4<<10, 1)
	base := inotifyWatches(t)
	fdsBefore := fds(t)
	ready, scanned := firstScan()
	b := &book{}
	f := b.follow(Config{Dirs: []string{dir}, Flush: b.flush, Ready: ready})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	waitFor(t, scanned)
	waitFor(t, func() bool { return inotifyWatches(t) == base+1 })
	inTree := 1 // folders in the tree: the root, then the archived ones
	for round := range 3 {
		var dirs []string
		for i := range 20 {
			d := filepath.Join(dir, fmt.Sprintf("--p%d-%d--", round, i))
			must(t, os.MkdirAll(filepath.Join(d, "sub"), 0o755))
			must(t, os.WriteFile(filepath.Join(d, "sub", "s.jsonl"), s, 0o644))
			dirs = append(dirs, d)
		}
		waitFor(t, func() bool { return inotifyWatches(t) == base+inTree+40 })
		for i, d := range dirs {
			switch i % 3 {
			case 0:
				must(t, os.RemoveAll(d))
			case 1:
				must(t, os.Rename(d, filepath.Join(away, filepath.Base(d))))
			case 2:
				must(t, os.Rename(d, filepath.Join(dir, "archive-"+filepath.Base(d))))
			}
		}
		for i := range dirs {
			if i%3 == 2 {
				inTree += 2
			}
		}
		want := base + inTree
		wait.For(t, 30*time.Second, func() bool { return inotifyWatches(t) == want }, func() string {
			return fmt.Sprintf("round %d: %d inotify watches, want %d", round, inotifyWatches(t)-base, want-base)
		})
	}
	cancel()
	must(t, <-done)
	if n := fds(t); n > fdsBefore {
		t.Errorf("%d descriptors open, %d before", n, fdsBefore)
	}
}

// A folder with a subfolder moved out of the tree, and a folder of the
// same name moved in later (a backup rotated out, a restore): a session
// in its subfolder is followed by inotify as it grows, not left for the
// next full scan.
func TestFolderMadeAgainWhereOneMovedOutIsWatched(t *testing.T) {
	dir, away, staging := t.TempDir(), t.TempDir(), t.TempDir()
	ready, scanned := firstScan()
	b := &book{}
	f := b.follow(Config{Dirs: []string{dir}, Flush: b.flush, Ready: ready, Settle: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	waitFor(t, scanned)
	d := filepath.Join(dir, "backup")
	must(t, os.MkdirAll(filepath.Join(d, "--p--"), 0o755))
	must(t, os.WriteFile(filepath.Join(d, "--p--", "old.jsonl"), []byte("H\nU\nA\n"), 0o644))
	waitFor(t, func() bool { return b.count("old.jsonl@2") == 1 })
	must(t, os.Rename(d, filepath.Join(away, "backup")))
	// The same names again, moved in whole with a session, which grows.
	must(t, os.MkdirAll(filepath.Join(staging, "backup", "--p--"), 0o755))
	p := filepath.Join(staging, "backup", "--p--", "new.jsonl")
	must(t, os.WriteFile(p, []byte("H\nU\nA\n"), 0o644))
	must(t, os.Rename(filepath.Join(staging, "backup"), d))
	waitFor(t, func() bool { return b.count("new.jsonl@2") == 1 })
	fh, err := os.OpenFile(filepath.Join(d, "--p--", "new.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = fh.WriteString("U\nA\n")
	must(t, err)
	must(t, fh.Close())
	waitFor(t, func() bool { return b.count("new.jsonl@6") == 1 })
	cancel()
	must(t, <-done)
}
