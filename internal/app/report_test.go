package app

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/report"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
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
		req, err := otlpjson.UnmarshalTraces(line)
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
	t.Cost = exactSum(costs)
	return t
}

// exactSum is the sum of vs, computed exactly and rounded once to the
// nearest float64: what a report's cost is of the roots it counted. 2,200
// bits hold any sum of float64 values exactly: their exponents span 2,098
// bits, plus room for carries.
func exactSum(vs []float64) float64 {
	s := new(big.Float).SetPrec(2200)
	for _, v := range vs {
		s.Add(s, new(big.Float).SetPrec(2200).SetFloat64(v))
	}
	f, _ := s.Float64()
	return f
}

// Costs add up exactly, whatever the order: 0.1 ten times is 1.
func TestExactSum(t *testing.T) {
	vs := []float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}
	var naive float64
	for _, v := range vs {
		naive += v
	}
	if naive == 1 {
		t.Fatal("the naive sum is exact: the test proves nothing")
	}
	if got := exactSum(vs); got != 1 {
		t.Errorf("exactSum = %v, want 1", got)
	}
	if got := exactSum([]float64{1e300, 1, -1e300}); got != 1 {
		t.Errorf("exactSum lost the 1: %v", got)
	}
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
	cfg := configtest.Default()
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
			math.Abs(exactSum(costs)-want.Cost) > 1e-9*want.Cost {
			t.Errorf("--by %s: the rows add up to %+v (cost %v), not the total %+v", by, sum, exactSum(costs), want)
		}
	}
	_, metricCost := historytest.MetricTotals(t, cfg.Metrics.File)
	if math.Abs(metricCost-want.Cost) > 1e-9*want.Cost {
		t.Errorf("pi.cost is %v, the roots' pi.cost.total %v", metricCost, want.Cost)
	}
	t.Logf("%d files, %d runs, $%.4f, %d input tokens", len(h.Paths)+len(h.Copies), want.Runs, want.Cost, want.Input)
}

// captureTree copies the real session captures of every Pi version into
// a folder of their own, as Pi lays them out, two days old.
func captureTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	captures, _ := filepath.Glob(repo.Path("testdata/sessions/*/*.jsonl"))
	for _, c := range captures {
		if strings.HasSuffix(c, ".stream.jsonl") || strings.HasSuffix(c, ".in.jsonl") {
			continue
		}
		version := filepath.Base(filepath.Dir(c))
		p := filepath.Join(dir, "--"+version+"--", filepath.Base(c))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-48 * time.Hour)
		_ = os.Chtimes(p, old, old)
	}
	return dir
}

// The table of the real captures, at 80 columns and cut to 44, is the
// golden one (go test ./internal/app -run TestReportGolden -update writes
// it again).
func TestReportGolden(t *testing.T) {
	dir := captureTree(t)
	var got strings.Builder
	for _, tc := range []struct {
		width string
		args  []string
	}{
		{"80", []string{"--by", "day", "--tz", "UTC"}},
		{"80", []string{"--by", "session", "--tz", "UTC"}},
		{"80", []string{"--by", "model"}},
		{"60", []string{"--by", "session"}},
		{"44", []string{"--by", "session"}},
		{"80", []string{"--by", "project", "--csv"}},
	} {
		code, out, errs := mainWith(map[string]string{"COLUMNS": tc.width}, append(append([]string{"report"}, tc.args...), dir)...)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s", tc.args, code, errs)
		}
		fmt.Fprintf(&got, "$ COLUMNS=%s pi-otel report %s\n%s\n", tc.width, strings.Join(tc.args, " "), out)
		if w, _ := strconv.Atoi(tc.width); !slices.Contains(tc.args, "--csv") {
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if n := utf8.RuneCountInString(line); n > w {
					t.Errorf("%q at %d columns: a line of %d: %q", tc.args, w, n, line)
				}
			}
		}
	}
	// The README shows the table by model: it must be what users see.
	_, byModel, _ := strings.Cut(got.String(), "pi-otel report --by model\n")
	byModel, _, _ = strings.Cut(byModel, "\n\n")
	if readme := string(repo.Read(t, "README.md")); !strings.Contains(readme, "$ pi-otel report --by model testdata/sessions\n"+byModel+"\n```") {
		t.Errorf("the README's report is not this one:\n%s", byModel)
	}
	golden := repo.Path("internal/app/testdata/report.golden")
	if updating() {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("the report differs from %s (-update writes it):\n%s", golden, got.String())
	}
}

// Bad flags and paths get one clear line and exit 2; nothing on stdout.
func TestReportBadInput(t *testing.T) {
	dir := captureTree(t)
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"--by", "year", dir}, `pi-otel report: unknown --by "year": want day, week, month, session, model, project, team or skill`},
		{nil, []string{"--since", "yesterday", dir}, `pi-otel report: --since "yesterday": want a date`},
		{nil, []string{"--until", "2026-13-40", dir}, `pi-otel report: --until "2026-13-40": want a date`},
		{nil, []string{"--tz", "Mars/Olympus", dir}, `pi-otel report: --tz "Mars/Olympus": want an IANA time zone`},
		{nil, []string{"--since", "2026-12-05", "--until", "2026-12-01", dir}, "is not before --until"},
		{nil, []string{"--json", "--csv", dir}, "--json and --csv: choose one"},
		{nil, []string{"--endpoint", "http://x", dir}, "pi-otel report: unknown flag --endpoint; see pi-otel report --help"},
		{nil, []string{filepath.Join(dir, "nothing-here")}, "nothing-here: no such file or directory"},
		{nil, []string{file}, "notes.txt is neither a folder nor a Pi session file"},
		{map[string]string{"HOME": t.TempDir()}, nil, "pi-otel report: no Pi sessions at "},
	} {
		code, out, errs := mainWith(tc.env, append([]string{"report"}, tc.args...)...)
		if code == 0 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want an exit code and %q", tc.args, code, out, errs, tc.want)
		}
	}
	// A bad variable from the environment is set machine-wide: ignored, said.
	code, _, errs := mainWith(map[string]string{"PI_OTEL_REPORT_JSON": "maybe"}, "report", dir)
	if code != 0 || !strings.Contains(errs, `ignoring PI_OTEL_REPORT_JSON "maybe"`) {
		t.Errorf("bad variable: exit %d, stderr %q", code, errs)
	}
}

// Hostile files cost nothing but their own lines: garbage, a huge line,
// binary noise, an empty file, a file of one line without an end, and a
// file that is not a session at all. What was skipped is said.
func TestReportHostileFiles(t *testing.T) {
	dir := captureTree(t)
	want := runReport(t, nil, dir).Total
	good, _ := filepath.Glob(filepath.Join(dir, "--pi-1.6.0--", "bash-tool.jsonl"))
	src, err := os.ReadFile(good[0])
	if err != nil {
		t.Fatal(err)
	}
	hostile := filepath.Join(dir, "--hostile--")
	if err := os.MkdirAll(hostile, 0o755); err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(src, []byte("\n"))
	huge := append(append([]byte{}, first...), '\n')
	huge = append(huge, `{"type":"message","id":"x","message":{"role":"user","content":"`...)
	huge = append(huge, bytes.Repeat([]byte("a"), 20<<20)...)
	huge = append(huge, "\n{not json\n\x00\x01\x02\n"...)
	for name, b := range map[string][]byte{
		"garbage.jsonl": []byte("\x00\xff garbage\n{{{{\n"),
		"huge.jsonl":    huge,
		"empty.jsonl":   nil,
		"nolf.jsonl":    []byte(`{"type":"session"`),
		"other.jsonl":   []byte(`{"hello":"world"}` + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(hostile, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := mainWith(nil, "report", "--json", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	var got reportJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Total != want {
		t.Errorf("with hostile files the total is %+v, without %+v", got.Total, want)
	}
	for _, say := range []string{"garbage.jsonl is not a Pi session file", "damaged lines skipped"} {
		if !strings.Contains(errs, say) {
			t.Errorf("stderr does not say %q:\n%s", say, errs)
		}
	}
}

// --since and --until in a time zone, relative ones from an injected now.
func TestReportBoundsAndZone(t *testing.T) {
	dir := captureTree(t)
	// The Pi captures' runs all begin on one day in UTC; oh-my-pi's, on
	// another.
	if err := os.RemoveAll(filepath.Join(dir, "--omp-18.2.3--")); err != nil {
		t.Fatal(err)
	}
	all := runReport(t, nil, "--by", "day", "--tz", "UTC", dir)
	if len(all.Rows) == 0 || all.Total.Runs == 0 {
		t.Fatal("no runs in the captures")
	}
	day := all.Rows[0].Key
	if got := runReport(t, nil, "--tz", "UTC", "--since", day, "--until", day, dir).Total; got != all.Total {
		t.Errorf("since and until %s: %+v, want everything %+v", day, got, all.Total)
	}
	d, _ := time.Parse(time.DateOnly, day)
	next := d.AddDate(0, 0, 1).Format(time.DateOnly)
	if got := runReport(t, nil, "--tz", "UTC", "--since", next, dir).Total; got.Runs != 0 || got.Cost != 0 {
		t.Errorf("since %s: %+v, want nothing", next, got)
	}
	if got := runReport(t, map[string]string{"PI_OTEL_REPORT_UNTIL": day, "PI_OTEL_REPORT_TZ": "UTC"}, dir).Total; got != all.Total {
		t.Errorf("until %s from the environment: %+v", day, got)
	}
	// Durations go back from now: here, an injected one.
	for _, tc := range []struct {
		now  time.Time
		runs bool
	}{{d.Add(36 * time.Hour), true}, {d.Add(72 * time.Hour), false}} {
		var out, errb bytes.Buffer
		env := Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		if code := reportCommand(t.Context(), env, []string{"--json", "--since", "2d", dir}, reportTerm{now: tc.now}); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		var got reportJSON
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if (got.Total.Runs > 0) != tc.runs {
			t.Errorf("--since 2d at %s: %d runs", tc.now, got.Total.Runs)
		}
	}
}

// pi-otel report --help says what it does, with examples, every flag with
// its variable, and no exporter flag: report exports nothing.
func TestReportHelp(t *testing.T) {
	code, out, errs := mainWith(nil, "report", "--help")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"Usage: pi-otel report [flags] [PATH...]", firstLine(commandDocs["report"].about), "Examples:",
		"  --by GROUPING\n", "PI_OTEL_REPORT_BY", "  --since TIME\n", "  --until TIME\n", "  --tz ZONE\n", "  --json\n", "  --csv\n",
		"  --team NAME\n", "  --quiet\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--endpoint") || strings.Contains(out, "--traces-exporter") {
		t.Errorf("help lists exporter flags:\n%s", out)
	}
	// docs/report.md names every flag and variable.
	doc := string(repo.Read(t, "docs/report.md"))
	for _, line := range strings.Split(out, "\n") {
		if m := regexp.MustCompile(`^  --([a-z-]+)`).FindStringSubmatch(line); m != nil && !strings.Contains(doc, "--"+m[1]) {
			t.Errorf("docs/report.md does not name --%s", m[1])
		}
		for _, v := range regexp.MustCompile(`PI_OTEL_[A-Z_]+`).FindAllString(line, -1) {
			if !strings.Contains(doc, v) {
				t.Errorf("docs/report.md does not name %s", v)
			}
		}
	}
}

// pi.team is the reporting process's, read as watch reads it: --team,
// else PI_OTEL_TEAM, else pi.team in OTEL_RESOURCE_ATTRIBUTES. The report
// by team names the team watch puts on the roots, with their cost.
func TestReportTeamIsTheTraces(t *testing.T) {
	dir := captureTree(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"resource attributes", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "pi.team=platform,deployment.environment=ci"}, nil, "platform"},
		{"variable over attributes", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "pi.team=platform", "PI_OTEL_TEAM": "payments"}, nil, "payments"},
		{"flag over both", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "pi.team=platform", "PI_OTEL_TEAM": "payments"}, []string{"--team", " search "}, "search"},
		{"none", nil, nil, "(none)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("watch", flag.ContinueOnError)
			config.RegisterFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(fs, func(k string) string { return tc.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			cfg.Quiet = true
			cfg.Traces.Exporter, cfg.Traces.File = telemetry.ExporterFile, filepath.Join(t.TempDir(), "traces.jsonl")
			backfill(t, dir, cfg, 0)
			roots := exportedRoots(t, cfg.Traces.File)
			for _, s := range roots {
				if got := attr(s, string(vocab.TeamKey)).GetStringValue(); got != strings.TrimPrefix(tc.want, "(none)") {
					t.Fatalf("watch's root has pi.team %q, want %q", got, tc.want)
				}
			}
			want := rootTotals(roots)

			got := runReport(t, tc.env, append(append([]string{"--by", "team"}, tc.args...), dir)...)
			if len(got.Rows) != 1 || got.Rows[0].Key != tc.want || got.Rows[0].Totals != want {
				t.Errorf("report --by team: %+v, want one row %q with the traces' %+v", got.Rows, tc.want, want)
			}
		})
	}
}

// Two entries on one line (Pi's writes met, with no LF between them) are
// both counted, and the line said as repaired.
func TestReportEntriesOnOneLine(t *testing.T) {
	dir := captureTree(t)
	want := runReport(t, nil, dir).Total
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
	joined := 0
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// Each assistant message with its usage joins the line before it.
		b = bytes.ReplaceAll(b, []byte("\n"+`{"type":"message"`), []byte(`{"type":"message"`))
		joined += bytes.Count(b, []byte(`}{"type":"message"`))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := mainWith(nil, "report", "--json", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got reportJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Total != want {
		t.Errorf("with entries joined: %+v, want %+v", got.Total, want)
	}
	if joined < 50 || !strings.Contains(errs, "of several entries with no line end between them read as those entries") {
		t.Errorf("%d lines joined; stderr:\n%s", joined, errs)
	}
}

// Without paths, the report reads Pi's session folder and oh-my-pi's
// (~/.omp/agent/sessions), either alone or both.
func TestReportDefaultFolders(t *testing.T) {
	home := t.TempDir()
	put := func(dir, version, name string) {
		p := filepath.Join(home, dir, "agent", "sessions", "--proj--", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, repo.Read(t, "testdata/sessions/"+version+"/"+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"HOME": home}
	if code, _, errs := mainWith(env, "report"); code == 0 || !strings.Contains(errs, "no Pi sessions at") {
		t.Errorf("no folder: exit %d, %s", code, errs)
	}
	put(".omp", "omp-18.2.3", "bash-tool.jsonl")
	if got := runReport(t, env); got.Total.Runs != 1 || got.Total.Input != 33632 {
		t.Errorf("oh-my-pi's folder alone: %+v", got.Total)
	}
	put(".pi", "pi-1.6.0", "text.jsonl")
	if got := runReport(t, env); got.Total.Runs != 2 {
		t.Errorf("both folders: %+v, want 2 runs", got.Total)
	}
}

// Report collects garbage less often while it reads a history, unless
// GOGC says how often, and leaves the pace as it found it. Not parallel:
// the pace is the process's.
func TestReportGCPace(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	restore := reportGC(func(string) string { return "" })
	if got := debug.SetGCPercent(reportGCPercent); got != reportGCPercent {
		t.Errorf("while reporting: GC percent %d, want %d", got, reportGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after: GC percent %d, want the 100 it was", got)
	}
	restore = reportGC(func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set: GC percent %d, want it left at 100", got)
	}
	restore()
}

// The notes of what was passed over are the same from run to run, though
// the followers that make them run side by side: sorted, five said, the
// rest counted.
func TestReportNotesAreStable(t *testing.T) {
	dir := t.TempDir()
	for i := range 8 {
		name := filepath.Join(dir, fmt.Sprintf("d%d", i), "garbage.jsonl")
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte("\x00 not a session\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var first string
	for range 3 {
		code, _, errs := mainWith(nil, "report", "--json", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errs)
		}
		var notes []string
		for _, l := range strings.Split(errs, "\n") {
			if strings.Contains(l, "is not a Pi session file") {
				notes = append(notes, l)
			}
		}
		if len(notes) != 5 || !slices.IsSorted(notes) || !strings.Contains(errs, "3 more notes like these") {
			t.Fatalf("notes not five, sorted, then a count:\n%s", errs)
		}
		if first == "" {
			first = errs
		} else if errs != first {
			t.Errorf("stderr differs from the first run's:\n%s\nfirst:\n%s", errs, first)
		}
	}
}

// The caller's TRACEPARENT, sampled or not, changes nothing in a report:
// its spans go nowhere, so they join no trace.
func TestReportIgnoresTraceparent(t *testing.T) {
	dir := captureTree(t)
	for _, by := range []string{"session", "model"} {
		want := runReport(t, nil, "--by", by, dir)
		if want.Total.Runs == 0 {
			t.Fatalf("--by %s: no runs in the captures", by)
		}
		for _, flags := range []string{"01", "00"} {
			env := map[string]string{"TRACEPARENT": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-" + flags}
			if got := runReport(t, env, "--by", by, dir); !reflect.DeepEqual(got, want) {
				t.Errorf("--by %s with a TRACEPARENT flagged %s:\n%+v\nwithout:\n%+v", by, flags, got, want)
			}
		}
	}
}
