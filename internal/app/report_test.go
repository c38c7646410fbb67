package app

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/report"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// reportJSON is report --json's output.
type reportJSON struct {
	Rows  []report.Row  `json:"rows"`
	Total report.Totals `json:"total"`
}

// runReport runs pi-otel report --json with args and decodes its output.
func runReport(t *testing.T, env map[string]string, args ...string) reportJSON {
	t.Helper()
	code, out, errs := mainWith(env, append([]string{"report", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("report %q: exit %d\n%s", args, code, errs)
	}
	var r reportJSON
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("report %q: %v\n%s", args, err, out)
	}
	return r
}

// exportedRoots are the root spans of Pi's runs in a traces file, by
// span id (a span exported twice counts once).
func exportedRoots(t *testing.T, path string) map[string]*tracepb.Span {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	roots := map[string]*tracepb.Span{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		req, err := otlpfile.UnmarshalTraces(line)
		if err != nil {
			t.Fatal(err)
		}
		for s := range otlpwalk.Spans(req) {
			if len(s.GetParentSpanId()) == 0 && s.GetName() == vocab.SpanRoot && attr(s, string(vocab.NestedDepthKey)) == nil {
				roots[hex.EncodeToString(s.GetSpanId())] = s
			}
		}
	}
	return roots
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

func intAttr(s *tracepb.Span, key string) int64 { return attr(s, key).GetIntValue() }

// rootTotals adds up the roots as a user of the traces would: the sum of
// pi.cost.total, computed exactly, and of the usage tokens.
func rootTotals(roots map[string]*tracepb.Span) report.Totals {
	var t report.Totals
	var costs []float64
	for _, s := range roots {
		costs = append(costs, attr(s, string(vocab.CostTotalKey)).GetDoubleValue())
		cr, cw := intAttr(s, string(vocab.GenAIUsageCacheReadKey)), intAttr(s, string(vocab.GenAIUsageCacheCreationKey))
		t.Input += intAttr(s, string(vocab.GenAIUsageInputTokensKey)) - cr - cw
		t.Output += intAttr(s, string(vocab.GenAIUsageOutputTokensKey))
		t.CacheRead += cr
		t.CacheWrite += cw
		t.Runs++
		if attr(s, string(vocab.OutcomeKey)).GetStringValue() == string(vocab.OutcomeError) {
			t.Errors++
		}
	}
	t.Cost = report.ExactSum(costs)
	return t
}

// reportTree is a history with every kind of file the report must count
// right: generated sessions, the real captures of every Pi version (some
// without times, with CRLF, without a last LF), backups and snapshots of
// some sessions (the same runs, in several files), and the session corpus
// (forks, resaved and repeated files, child sessions).
func reportTree(t *testing.T, files int, bytes int64) historytest.History {
	h := historytest.WithCopies(t, historytest.Write(t, files, bytes))
	corpus, _ := filepath.Glob(repo.Path("internal/session/testdata/corpus/*.jsonl"))
	dir := filepath.Join(h.Dir, "corpus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range corpus {
		if strings.HasSuffix(c, ".stream.jsonl") {
			continue
		}
		b := repo.Read(t, strings.TrimPrefix(c, repo.Path("")+"/"))
		p := filepath.Join(dir, filepath.Base(c))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		h.Paths = append(h.Paths, p)
	}
	return h
}

// The report is the traces' own accounting: over one tree, its totals
// are the sum of the run roots' pi.cost.total and usage tokens that
// pi-otel watch --since all exports for it (the cost exactly, to the last
// bit), its runs and errors the roots and their outcomes; and its cost is
// the pi.cost metric's.
func TestReportIsTheTraces(t *testing.T) {
	h := reportTree(t, 40, 3<<20)
	out := t.TempDir()
	cfg := config.Default()
	cfg.Quiet = true
	cfg.Traces.Exporter, cfg.Traces.File = telemetry.ExporterFile, filepath.Join(out, "traces.jsonl")
	cfg.Metrics.Exporter, cfg.Metrics.File = telemetry.ExporterFile, filepath.Join(out, "metrics.jsonl")
	backfill(t, h.Dir, cfg, 0)
	roots := exportedRoots(t, cfg.Traces.File)
	want := rootTotals(roots)
	if want.Runs < 100 || want.Cost == 0 || want.CacheRead == 0 {
		t.Fatalf("the tree is too plain to compare: %+v", want)
	}

	for _, by := range report.Groupings() {
		got := runReport(t, nil, "--by", string(by), h.Dir)
		if got.Total != want {
			t.Errorf("--by %s: report's total\n%+v\nthe traces'\n%+v", by, got.Total, want)
		}
		// The rows add up to the total (runs may count in several rows
		// of a grouping that splits them).
		var sum report.Totals
		var costs []float64
		for _, r := range got.Rows {
			sum.Input += r.Input
			sum.Output += r.Output
			sum.CacheRead += r.CacheRead
			sum.CacheWrite += r.CacheWrite
			costs = append(costs, r.Cost)
		}
		if sum.Input != want.Input || sum.Output != want.Output || sum.CacheRead != want.CacheRead || sum.CacheWrite != want.CacheWrite ||
			math.Abs(report.ExactSum(costs)-want.Cost) > 1e-9*want.Cost {
			t.Errorf("--by %s: the rows add up to %+v (cost %v), not the total %+v", by, sum, report.ExactSum(costs), want)
		}
	}
	_, metricCost := historytest.MetricTotals(t, cfg.Metrics.File)
	if math.Abs(metricCost-want.Cost) > 1e-9*want.Cost {
		t.Errorf("pi.cost is %v, the roots' pi.cost.total %v", metricCost, want.Cost)
	}
	t.Logf("%d files, %d runs, $%.4f, %d input tokens", len(h.Paths)+len(h.Copies), want.Runs, want.Cost, want.Input)
}
