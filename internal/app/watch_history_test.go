package app

import (
	"context"
	"errors"
	"flag"
	"io"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

var bigHistory = flag.Bool("history", false, "backfill the full real-history test: 2,000 files, 100 MB")

// backfillResult is what a backfill did.
type backfillResult struct {
	elapsed time.Duration
	// midway is the bytes committed in the state while the first scan was
	// still going.
	midway   int64
	peakHeap uint64
	stats    sessionwatch.Stats
	state    string // the state file
}

// backfill runs pi-otel watch --since all over dir, as Watch wires it,
// until its first scan is done, then stops it.
func backfill(tb testing.TB, dir string, cfg config.Config, commitBytes int64) backfillResult {
	var res backfillResult
	state := filepath.Join(tb.TempDir(), "watch.json")
	res.state = state
	env := Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, fc := sinceAll(ctx, tb, env, cfg, dir, state)
	fc.CommitBytes = commitBytes
	fc.Ready = cancel // the history is traced: stop, as a signal would
	f := sessionwatch.New(fc)

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the state while the pass goes, and the heap
		defer wg.Done()
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			res.peakHeap = max(res.peakHeap, ms.HeapInuse)
			st, _, err := sessionwatch.LoadState(state)
			if err != nil || st.Scan == nil {
				continue
			}
			var c int64
			for _, fs := range st.Files {
				c += fs.Committed
			}
			res.midway = max(res.midway, c)
		}
	}()
	start := time.Now()
	if err := f.Run(ctx); err != nil {
		tb.Fatal(err)
	}
	res.elapsed = time.Since(start)
	close(done)
	wg.Wait()
	res.stats = f.Stats()
	return res
}

// sinceAll is the pipeline and follower configuration of pi-otel watch
// --since all over dir, as Watch wires them, with backpressure until ctx
// ends.
func sinceAll(ctx context.Context, tb testing.TB, env Env, cfg config.Config, dir, state string) (*sessionPipeline, sessionwatch.Config) {
	tb.Helper()
	sp, err := newSessionPipeline(env, cfg, sessionConfig{Telemetry: []telemetry.Option{telemetry.WithBackpressure(ctx)}})
	if err != nil {
		tb.Fatal(err)
	}
	fc := sp.followerConfig()
	fc.Dirs, fc.StatePath, fc.Since = []string{dir}, state, sessionwatch.SinceAll
	return sp, fc
}

// The real-history test: a history of real-shaped session files traced by
// watch --since all into files gives every span of replaying each file,
// once, with the same ids; pi.runs and pi.cost equal the runs and their
// cost; and progress is committed while the pass goes. -history runs it at
// 2,000 files, 100 MB.
func TestWatchBackfillsHistoryAsReplay(t *testing.T) {
	files, total := 60, int64(6<<20)
	if *bigHistory {
		files, total = 2000, 100_000_000
	}
	// Backups and snapshots of some sessions in the same tree: their runs
	// are the same runs, traced once.
	h := historytest.WithCopies(t, historytest.Write(t, files, total))
	want := historytest.Replay(t, h.Paths)

	out := t.TempDir()
	cfg := configtest.Default()
	cfg.Quiet = true
	cfg.Traces.Exporter, cfg.Traces.File = telemetry.ExporterFile, filepath.Join(out, "traces.jsonl")
	cfg.Metrics.Exporter, cfg.Metrics.File = telemetry.ExporterFile, filepath.Join(out, "metrics.jsonl")
	cfg.Batch.MaxQueueSize = 256 // small, so backpressure is at work
	res := backfill(t, h.Dir, cfg, h.Bytes/10)

	got := historytest.Exported(t, cfg.Traces.File)
	var dups, missing, extra int
	for id, n := range got {
		if n > 1 {
			dups += n - 1
		}
		if _, ok := want.Spans[id]; !ok {
			extra++
		}
	}
	for id := range want.Spans {
		if got[id] == 0 {
			missing++
		}
	}
	t.Logf("%d files (%d of them copies), %.1f MB: %d spans, %d runs, in %s (%.0f MB/s), heap peak %.1f MB, %d commits",
		len(h.Paths)+len(h.Copies), len(h.Copies), float64(h.Bytes)/1e6, len(want.Spans), want.Runs, res.elapsed.Round(time.Millisecond),
		float64(h.Bytes)/1e6/res.elapsed.Seconds(), float64(res.peakHeap)/(1<<20), res.stats.Commits)
	if missing > 0 {
		for _, p := range h.Paths {
			one := historytest.Replay(t, []string{p})
			n := 0
			for id := range one.Spans {
				if got[id] == 0 {
					n++
				}
			}
			if n > 0 {
				t.Logf("%s: %d of its %d spans missing", filepath.Base(p), n, len(one.Spans))
			}
		}
	}
	if dups+missing+extra > 0 || len(got) != len(want.Spans) {
		t.Errorf("watch wrote %d spans, replay gives %d: %d duplicates, %d missing, %d not in replay",
			len(got), len(want.Spans), dups, missing, extra)
	}
	runs, cost := historytest.MetricTotals(t, cfg.Metrics.File)
	if runs != want.Runs || math.Abs(cost-want.Cost) > 1e-6*max(1, want.Cost) {
		t.Errorf("metrics: pi.runs %d, pi.cost %.4f; replay: %d runs costing %.4f", runs, cost, want.Runs, want.Cost)
	}
	if want.Runs == 0 {
		t.Fatal("the history has no runs")
	}
	if res.midway == 0 {
		t.Error("nothing was committed while the backfill went on")
	}
	// Bounded memory: the queue, one quiet file's tracer at a time, the
	// follower's bookkeeping; not the history. (The heap also holds this
	// test's reference, replay's span ids.)
	if res.peakHeap > 64<<20 {
		t.Errorf("heap in use peaked at %.1f MB during the backfill", float64(res.peakHeap)/(1<<20))
	}
}

// A flush that fails (here the first, as an exporter that lost a batch)
// has its runs traced again from the committed place: their spans are
// exported again, and still count once in pi.runs and pi.cost.
func TestWatchRetracedRunsCountOnce(t *testing.T) {
	t.Parallel()
	h := historytest.Write(t, 3, 200_000)
	want := historytest.Replay(t, h.Paths)
	out := t.TempDir()
	cfg := configtest.Default()
	cfg.Quiet = true
	// Where a backfill without failure leaves every file: the retried one
	// is done when it stands there too.
	none := cfg
	none.Traces.Exporter, none.Metrics.Exporter = telemetry.ExporterNone, telemetry.ExporterNone
	ref, _, err := sessionwatch.LoadState(backfill(t, h.Dir, none, 0).state)
	if err != nil {
		t.Fatal(err)
	}
	done := map[string]int64{}
	for _, fs := range ref.Files {
		done[fs.Path] = fs.Committed
	}
	cfg.Traces.Exporter, cfg.Traces.File = telemetry.ExporterFile, filepath.Join(out, "traces.jsonl")
	cfg.Metrics.Exporter, cfg.Metrics.File = telemetry.ExporterFile, filepath.Join(out, "metrics.jsonl")
	state := filepath.Join(out, "watch.json")
	env := Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sp, fc := sinceAll(ctx, t, env, cfg, h.Dir, state)
	var failed bool
	fc.Flush = func(ctx context.Context, final bool) error {
		err := sp.flush(ctx, final)
		if !final && !failed {
			failed = true
			return errors.New("a batch was lost")
		}
		return err
	}
	f := sessionwatch.New(fc)
	clean := func() bool { // every file stands where a clean pass leaves it
		st, first, err := sessionwatch.LoadState(state)
		if err != nil || first {
			return false
		}
		n := 0
		for _, fs := range st.Files {
			if fs.Committed == done[fs.Path] {
				n++
			}
		}
		return n == len(done)
	}
	go func() {
		wait.Until(time.Hour, func() bool { return ctx.Err() != nil || clean() })
		cancel()
	}()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !failed || f.Stats().Failures != 1 {
		t.Fatalf("the failure was not seen: %+v", f.Stats())
	}
	got := historytest.Exported(t, cfg.Traces.File)
	again := 0
	for id := range want.Spans {
		if got[id] == 0 {
			t.Fatalf("span %s never exported", id)
		}
		if got[id] > 1 {
			again++
		}
	}
	runs, cost := historytest.MetricTotals(t, cfg.Metrics.File)
	t.Logf("%d spans, %d exported again; %d runs", len(want.Spans), again, want.Runs)
	if again == 0 {
		t.Error("no run was traced again after the failed flush")
	}
	if runs != want.Runs || math.Abs(cost-want.Cost) > 1e-6*max(1, want.Cost) {
		t.Errorf("metrics: pi.runs %d, pi.cost %.4f; replay: %d runs costing %.4f", runs, cost, want.Runs, want.Cost)
	}
}
