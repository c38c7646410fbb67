// Package historytest writes real-shaped Pi histories (many session
// files) and says what replaying them gives, for the tests of watch at
// scale.
package historytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// History is a real-shaped Pi history on disk.
type History struct {
	Dir   string
	Paths []string
	Bytes int64
	// Copies are backups and snapshots of some of Paths (WithCopies):
	// files of the same sessions, to be traced once with them.
	Copies []string
}

// WithCopies adds, for every seventh file, a backup copy with its times
// (cp -a) in a backup folder under the history's root, and a snapshot of
// its first half (cut after a whole line) beside it, as shared histories
// hold them.
func WithCopies(tb testing.TB, h History) History {
	for i, p := range h.Paths {
		if i%7 != 0 {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			tb.Fatal(err)
		}
		rel, _ := filepath.Rel(h.Dir, p)
		half := b[:len(b)/2]
		if j := bytes.LastIndexByte(half, '\n'); j >= 0 {
			half = half[:j+1]
		}
		for name, data := range map[string][]byte{
			filepath.Join(h.Dir, "backup", rel):                          b,
			filepath.Join(filepath.Dir(p), "snapshot-"+filepath.Base(p)): half,
		} {
			if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				tb.Fatal(err)
			}
			if err := os.WriteFile(name, data, 0o644); err != nil {
				tb.Fatal(err)
			}
			_ = os.Chtimes(name, st.ModTime(), st.ModTime())
			h.Copies = append(h.Copies, name)
			h.Bytes += int64(len(data))
		}
	}
	return h
}

// Write writes files generated session files of about total bytes
// in all (sizes spread over two orders of magnitude, as real histories
// are), plus copies of every real session captured in testdata, each with
// its own session id, into project folders of 50, two days old. The real
// copies come as a history gathered by hand does: some copied without
// keeping their times (modified now, entries old), some with CRLF line
// ends, some without an LF after the last line.
func Write(tb testing.TB, files int, total int64) History {
	h := History{Dir: tb.TempDir()}
	old := time.Now().Add(-48 * time.Hour)
	mtime := old
	add := func(name string, write func(w io.Writer) error) {
		d := filepath.Join(h.Dir, fmt.Sprintf("--home-u-proj%d--", len(h.Paths)/50))
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
		if err := errors.Join(bw.Flush(), fh.Close()); err != nil {
			tb.Fatal(err)
		}
		st, _ := os.Stat(p)
		h.Bytes += st.Size()
		h.Paths = append(h.Paths, p)
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
					_, err := w.Write(variant(WithSessionID(tb, src, fmt.Sprintf("real-%d-%d-%v", i, v, now))))
					return err
				})
			}
		}
	}
	mtime = old
	// Sizes log-spread around the mean: most files small, a few large.
	mean := float64(total) / float64(files)
	for i := range files {
		// sessiongen completes the run that crosses the size: about 30 KB
		// more, on average.
		size := int64(mean*math.Exp(float64(i%7)-3)/4.54) - 30<<10
		add(fmt.Sprintf("2026-01-01T00-00-00-000Z_gen-%d.jsonl", i), func(w io.Writer) error {
			_, err := sessiongen.Write(w, sessiongen.Config{Size: max(size, 4<<10), Seed: uint64(i), ID: fmt.Sprintf("gen-%06d", i)})
			return err
		})
	}
	return h
}

// WithSessionID gives a captured session file's header another id. An
// oh-my-pi file's header follows its title line.
func WithSessionID(tb testing.TB, src []byte, id string) []byte {
	var title []byte
	if bytes.HasPrefix(src, []byte(`{"type":"title"`)) {
		i := bytes.IndexByte(src, '\n') + 1
		title, src = src[:i], src[i:]
	}
	first, rest, _ := bytes.Cut(src, []byte("\n"))
	var hdr map[string]any
	if err := json.Unmarshal(first, &hdr); err != nil {
		tb.Fatalf("header: %v", err)
	}
	hdr["id"] = id
	b, _ := json.Marshal(hdr)
	return append(append(append(title, b...), '\n'), rest...)
}

// Expected is what replaying every file gives.
type Expected struct {
	Spans map[string]string // span id: trace id
	Runs  int64
	Cost  float64
}

// ByTrace groups the span ids by trace id.
func (e Expected) ByTrace() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for span, tr := range e.Spans {
		if out[tr] == nil {
			out[tr] = map[string]bool{}
		}
		out[tr][span] = true
	}
	return out
}

// Replay traces each file as pi-otel replay FILE does (a tracer over
// every line, closed at the end) into span ids and the span metrics.
func Replay(tb testing.TB, paths []string) Expected {
	return ReplayFrom(tb, paths, nil)
}

// ReplayFrom is Replay with the runs begun before skip(path) left out, as
// a watch that committed that far goes on; nil skips nothing.
func ReplayFrom(tb testing.TB, paths []string, skip func(path string) int64) Expected {
	ids := spanid.NewGenerator(nil)
	rec := &spanIDs{ids: map[string]string{}}
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
		var from int64
		if skip != nil {
			from = skip(p)
		}
		tr := session.New(session.Config{TracerProvider: tp, Runs: func(r *session.Run) {
			if r.Off >= from {
				r.Trace(false)
			}
		}})
		var off int64
		for len(b) > 0 { // as replay's reader: a last line without LF counts
			line, rest, _ := bytes.Cut(b, []byte("\n"))
			tr.Line(off, line)
			off += int64(len(line)) + 1
			b = rest
		}
		tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		tb.Fatal(err)
	}
	e := Expected{Spans: rec.ids}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name == vocab.MetricRuns {
					for _, dp := range d.DataPoints {
						e.Runs += dp.Value
					}
				}
			case metricdata.Sum[float64]:
				if m.Name == vocab.MetricCost {
					for _, dp := range d.DataPoints {
						e.Cost += dp.Value
					}
				}
			}
		}
	}
	return e
}

type spanIDs struct {
	mu  sync.Mutex
	ids map[string]string
}

func (s *spanIDs) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *spanIDs) OnEnd(sp sdktrace.ReadOnlySpan) {
	s.mu.Lock()
	s.ids[sp.SpanContext().SpanID().String()] = sp.SpanContext().TraceID().String()
	s.mu.Unlock()
}
func (s *spanIDs) Shutdown(context.Context) error   { return nil }
func (s *spanIDs) ForceFlush(context.Context) error { return nil }

// Exported reads a traces file: how many times each span id was written.
func Exported(tb testing.TB, path string) map[string]int {
	return exported(tb, path, false)
}

// ExportedKilled is Exported for the file of a process killed mid-write:
// its last line may be cut short, and is then left out.
func ExportedKilled(tb testing.TB, path string) map[string]int {
	return exported(tb, path, true)
}

func exported(tb testing.TB, path string, killed bool) map[string]int {
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	n := map[string]int{}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	for i, line := range lines {
		if len(line) == 0 {
			continue
		}
		req, err := otlpjson.UnmarshalTraces(line)
		if err != nil && killed && i == len(lines)-1 && !bytes.HasSuffix(b, []byte("\n")) {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		for s := range otlpwalk.Spans(req) {
			n[hex.EncodeToString(s.GetSpanId())]++
		}
	}
	return n
}

// MetricTotals reads the last export of a metrics file: the sums of
// pi.runs and pi.cost (cumulative, so the last holds the totals).
func MetricTotals(tb testing.TB, path string) (runs int64, cost float64) {
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	req, err := otlpjson.UnmarshalMetrics(lines[len(lines)-1])
	if err != nil {
		tb.Fatal(err)
	}
	for m := range otlpwalk.Metrics(req) {
		switch m.GetName() {
		case vocab.MetricRuns:
			for _, dp := range m.GetSum().GetDataPoints() {
				runs += dp.GetAsInt()
			}
		case vocab.MetricCost:
			for _, dp := range m.GetSum().GetDataPoints() {
				cost += dp.GetAsDouble()
			}
		}
	}
	return runs, cost
}
