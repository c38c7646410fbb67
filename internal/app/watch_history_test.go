package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper"
)

var bigHistory = flag.Bool("history", false, "backfill the full real-history test: 2,000 files, 100 MB")

// history is a real-shaped Pi history on disk.
type history struct {
	dir   string
	paths []string
	bytes int64
}

// writeHistory writes files generated session files of about total bytes
// in all (sizes spread over two orders of magnitude, as real histories
// are), plus copies of every real session captured in testdata, each with
// its own session id, into project folders of 50, two days old. The real
// copies come as a history gathered by hand does: some copied without
// keeping their times (modified now, entries old), some with CRLF line
// ends, some without an LF after the last line.
func writeHistory(tb testing.TB, files int, total int64) history {
	h := history{dir: tb.TempDir()}
	old := time.Now().Add(-48 * time.Hour)
	mtime := old
	add := func(name string, write func(w io.Writer) error) {
		d := filepath.Join(h.dir, fmt.Sprintf("--home-u-proj%d--", len(h.paths)/50))
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		p := filepath.Join(d, name)
		fh, err := os.Create(p)
		if err != nil {
			tb.Fatal(err)
		}
		bw := bufio.NewWriter(fh)
		if err := write(bw); err != nil {
			tb.Fatal(err)
		}
		if err := errors2(bw.Flush(), fh.Close()); err != nil {
			tb.Fatal(err)
		}
		st, _ := os.Stat(p)
		h.bytes += st.Size()
		h.paths = append(h.paths, p)
		_ = os.Chtimes(p, mtime, mtime)
	}
	captures, _ := filepath.Glob(repo.Path("testdata/sessions/*/*.jsonl"))
	for i, c := range captures {
		if strings.HasSuffix(c, ".stream.jsonl") || strings.HasSuffix(c, ".in.jsonl") {
			continue
		}
		src, err := os.ReadFile(c)
		if err != nil {
			tb.Fatal(err)
		}
		for v, variant := range []func([]byte) []byte{
			func(b []byte) []byte { return b },
			func(b []byte) []byte { return bytes.TrimSuffix(b, []byte("\n")) },
			func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) },
		} {
			for _, now := range []bool{false, true} {
				mtime = old
				if now {
					mtime = time.Now()
				}
				add(fmt.Sprintf("real-%d-%d-%v.jsonl", i, v, now), func(w io.Writer) error {
					_, err := w.Write(variant(withSessionID(tb, src, fmt.Sprintf("real-%d-%d-%v", i, v, now))))
					return err
				})
			}
		}
	}
	mtime = old
	// Sizes log-spread around the mean: most files small, a few large.
	mean := float64(total) / float64(files)
	for i := range files {
		size := int64(mean * math.Exp(float64(i%7)-3) / 3.7)
		add(fmt.Sprintf("2026-01-01T00-00-00-000Z_gen-%d.jsonl", i), func(w io.Writer) error {
			_, err := sessiongen.Write(w, sessiongen.Config{Size: max(size, 4<<10), Seed: uint64(i), ID: fmt.Sprintf("gen-%06d", i)})
			return err
		})
	}
	return h
}

func errors2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// withSessionID gives a captured session file's header another id.
func withSessionID(tb testing.TB, src []byte, id string) []byte {
	first, rest, _ := bytes.Cut(src, []byte("\n"))
	var hdr map[string]any
	if err := json.Unmarshal(first, &hdr); err != nil {
		tb.Fatalf("header: %v", err)
	}
	hdr["id"] = id
	b, _ := json.Marshal(hdr)
	return append(append(b, '\n'), rest...)
}

// expected is what replaying every file gives.
type expected struct {
	spans map[string]bool
	runs  int64
	cost  float64
}

// replayAll traces each file as pi-otel replay FILE does (a tracer over
// every line, closed at the end) into span ids and the span metrics.
func replayAll(tb testing.TB, paths []string) expected {
	ids := &session.IDs{}
	rec := &spanIDs{ids: map[string]bool{}}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	sm, err := metrics.NewSpanMetrics(mp)
	if err != nil {
		tb.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(ids), sdktrace.WithSpanProcessor(rec), sdktrace.WithSpanProcessor(sm))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		tr := session.New(session.Config{TracerProvider: tp, IDs: ids})
		var off int64
		for len(b) > 0 { // as replay's reader: a last line without LF counts
			line, rest, _ := bytes.Cut(b, []byte("\n"))
			tr.Line(off, line)
			off += int64(len(line)) + 1
			b = rest
		}
		tr.Close(mapper.Ending{Reason: mapper.EndEOF})
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		tb.Fatal(err)
	}
	e := expected{spans: rec.ids}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name == metrics.MetricRuns {
					for _, dp := range d.DataPoints {
						e.runs += dp.Value
					}
				}
			case metricdata.Sum[float64]:
				if m.Name == metrics.MetricCost {
					for _, dp := range d.DataPoints {
						e.cost += dp.Value
					}
				}
			}
		}
	}
	return e
}

type spanIDs struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (s *spanIDs) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *spanIDs) OnEnd(sp sdktrace.ReadOnlySpan) {
	s.mu.Lock()
	s.ids[sp.SpanContext().SpanID().String()] = true
	s.mu.Unlock()
}
func (s *spanIDs) Shutdown(context.Context) error   { return nil }
func (s *spanIDs) ForceFlush(context.Context) error { return nil }

// exported reads a traces file: how many times each span id was written.
func exported(tb testing.TB, path string) map[string]int {
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	n := map[string]int{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		req, err := otlpfile.UnmarshalTraces(line)
		if err != nil {
			tb.Fatal(err)
		}
		for s := range otlpwalk.Spans(req) {
			n[hex.EncodeToString(s.GetSpanId())]++
		}
	}
	return n
}

// metricTotals reads the last export of a metrics file: the sums of
// pi.runs and pi.cost (cumulative, so the last holds the totals).
func metricTotals(tb testing.TB, path string) (runs int64, cost float64) {
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	req, err := otlpfile.UnmarshalMetrics(lines[len(lines)-1])
	if err != nil {
		tb.Fatal(err)
	}
	for m := range otlpwalk.Metrics(req) {
		switch m.GetName() {
		case metrics.MetricRuns:
			for _, dp := range m.GetSum().GetDataPoints() {
				runs += dp.GetAsInt()
			}
		case metrics.MetricCost:
			for _, dp := range m.GetSum().GetDataPoints() {
				cost += dp.GetAsDouble()
			}
		}
	}
	return runs, cost
}

// backfillResult is what a backfill did.
type backfillResult struct {
	elapsed time.Duration
	// midway is the bytes committed in the state while the first scan was
	// still going.
	midway   int64
	peakHeap uint64
	stats    sessionwatch.Stats
}

// backfill runs pi-otel watch --since all over dir, as Watch wires it,
// until its first scan is done, then stops it.
func backfill(tb testing.TB, dir string, cfg config.Config, commitBytes int64) backfillResult {
	var res backfillResult
	state := filepath.Join(tb.TempDir(), "watch.json")
	env := Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sp, err := newSessionPipeline(env, cfg, telemetry.WithBackpressure(ctx))
	if err != nil {
		tb.Fatal(err)
	}
	fc := sp.followerConfig(env, cfg)
	fc.Dirs, fc.StatePath, fc.Since = []string{dir}, state, sessionwatch.SinceAll
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
	h := writeHistory(t, files, total)
	want := replayAll(t, h.paths)

	out := t.TempDir()
	cfg := config.Default()
	cfg.Quiet = true
	cfg.Traces.Exporter, cfg.Traces.File = config.ExporterFile, filepath.Join(out, "traces.jsonl")
	cfg.Metrics.Exporter, cfg.Metrics.File = config.ExporterFile, filepath.Join(out, "metrics.jsonl")
	cfg.Batch.MaxQueueSize = 256 // small, so backpressure is at work
	res := backfill(t, h.dir, cfg, h.bytes/10)

	got := exported(t, cfg.Traces.File)
	var dups, missing, extra int
	for id, n := range got {
		if n > 1 {
			dups += n - 1
		}
		if !want.spans[id] {
			extra++
		}
	}
	for id := range want.spans {
		if got[id] == 0 {
			missing++
		}
	}
	t.Logf("%d files, %.1f MB: %d spans, %d runs, in %s (%.0f MB/s), heap peak %.1f MB, %d commits",
		len(h.paths), float64(h.bytes)/1e6, len(want.spans), want.runs, res.elapsed.Round(time.Millisecond),
		float64(h.bytes)/1e6/res.elapsed.Seconds(), float64(res.peakHeap)/(1<<20), res.stats.Commits)
	if missing > 0 {
		for _, p := range h.paths {
			one := replayAll(t, []string{p})
			n := 0
			for id := range one.spans {
				if got[id] == 0 {
					n++
				}
			}
			if n > 0 {
				t.Logf("%s: %d of its %d spans missing", filepath.Base(p), n, len(one.spans))
			}
		}
	}
	if dups+missing+extra > 0 || len(got) != len(want.spans) {
		t.Errorf("watch wrote %d spans, replay gives %d: %d duplicates, %d missing, %d not in replay",
			len(got), len(want.spans), dups, missing, extra)
	}
	runs, cost := metricTotals(t, cfg.Metrics.File)
	if runs != want.runs || math.Abs(cost-want.cost) > 1e-6*max(1, want.cost) {
		t.Errorf("metrics: pi.runs %d, pi.cost %.4f; replay: %d runs costing %.4f", runs, cost, want.runs, want.cost)
	}
	if want.runs == 0 {
		t.Fatal("the history has no runs")
	}
	if res.midway == 0 {
		t.Error("nothing was committed while the backfill went on")
	}
}
