package report

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// spend is one model call of a test run.
type spend struct {
	model, skill      string
	input, cr, output int64
	cost              float64
}

// runSpec is a run as the mapper traces it: a root with its totals, and
// chat spans below it (one inside a nested invoke_agent, as subagents
// are).
type runSpec struct {
	start            time.Time
	session, project string
	model            string // on the root, when the run used one
	outcome          vocab.Outcome
	calls            []spend
	// extra is spend only the root states (a usage entry).
	extra spend
	// retraced: traced again after a failed export (pi.retraced).
	retraced bool
}

func usageAttrs(s spend) []attribute.KeyValue {
	return []attribute.KeyValue{
		vocab.GenAIUsageInputTokensKey.Int64(s.input + s.cr),
		vocab.GenAIUsageOutputTokensKey.Int64(s.output),
		vocab.GenAIUsageCacheReadKey.Int64(s.cr),
		vocab.GenAIUsageCacheCreationKey.Int64(0),
		vocab.CostTotalKey.Float64(s.cost),
	}
}

// traceRuns traces runs into a Collector with opts, as the SDK hands spans
// to a processor.
func traceRuns(t *testing.T, opts Options, runs ...runSpec) *Collector {
	t.Helper()
	c := NewCollector(opts)
	traceInto(c, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(c)), runs...)
	return c
}

// traceInto traces runs with tp, which holds c.
func traceInto(c *Collector, tp *sdktrace.TracerProvider, runs ...runSpec) *Collector {
	tr := tp.Tracer("test")
	for _, r := range runs {
		ctx, root := tr.Start(context.Background(), vocab.SpanRoot, trace.WithTimestamp(r.start))
		total := r.extra
		for i, call := range r.calls {
			cctx := ctx
			var agent trace.Span
			if i%2 == 1 { // every other call made by a subagent
				cctx, agent = tr.Start(ctx, "invoke_agent worker", trace.WithAttributes(
					vocab.GenAIOperationNameKey.String("invoke_agent"), vocab.NestedDepthKey.Int(1)))
			}
			_, chat := tr.Start(cctx, "chat "+call.model, trace.WithTimestamp(r.start))
			attrs := append(usageAttrs(call), vocab.GenAIOperationNameKey.String("chat"), vocab.GenAIRequestModelKey.String(call.model))
			if call.skill != "" {
				attrs = append(attrs, vocab.SkillKey.String(call.skill))
			}
			if r.retraced {
				attrs = append(attrs, vocab.RetracedKey.Bool(true))
			}
			chat.SetAttributes(attrs...)
			chat.End()
			if agent != nil {
				agent.End()
			}
			total.input += call.input
			total.cr += call.cr
			total.output += call.output
			total.cost += call.cost
		}
		attrs := append(usageAttrs(total), vocab.GenAIOperationNameKey.String("invoke_agent"),
			vocab.GenAIConversationIDKey.String(r.session), vocab.OutcomeKey.String(string(r.outcome)))
		if r.project != "" {
			attrs = append(attrs, vocab.ProjectKey.String(r.project))
		}
		if r.model != "" {
			attrs = append(attrs, vocab.GenAIRequestModelKey.String(r.model))
		}
		if r.retraced {
			attrs = append(attrs, vocab.RetracedKey.Bool(true))
		}
		root.SetAttributes(attrs...)
		root.End()
	}
	return c
}

func rowsOf(tab Table) map[string]Totals {
	m := map[string]Totals{}
	for _, r := range tab.Rows {
		m[r.Key] = r.Totals
	}
	return m
}

var berlin = func() *time.Location {
	l, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	return l
}()

// Three runs around midnight in Berlin, a week's and a month's end.
func testRuns() []runSpec {
	return []runSpec{
		{ // Sunday 2026-11-29 23:30 in Berlin; 22:30 UTC
			start: time.Date(2026, 11, 29, 22, 30, 0, 0, time.UTC), session: "s1", project: "api", model: "m1", outcome: vocab.OutcomeOK,
			calls: []spend{{model: "m1", input: 100, cr: 10, output: 5, cost: 0.1}, {model: "m2", skill: "pdf", input: 50, output: 2, cost: 0.2}},
		},
		{ // Monday 2026-11-30 00:30 in Berlin; 23:30 UTC, still Sunday
			start: time.Date(2026, 11, 29, 23, 30, 0, 0, time.UTC), session: "s1", project: "api", outcome: vocab.OutcomeError,
			calls: []spend{{model: "m2", skill: "pdf", input: 7, output: 1, cost: 0.3}},
			extra: spend{input: 1000, cost: 0.7}, // a usage entry
		},
		{ // Tuesday 2026-12-01 10:00 in Berlin
			start: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), session: "s2", outcome: vocab.OutcomeOK,
		},
	}
}

// Each grouping puts each run, or each model call, where it belongs; in
// every one the total is the roots'.
func TestGroupings(t *testing.T) {
	want := Totals{Input: 1157, Output: 8, CacheRead: 10, Cost: 1.3, Runs: 3, Errors: 1}
	for _, tc := range []struct {
		by   Grouping
		loc  *time.Location
		rows map[string]Totals
	}{
		{ByDay, time.UTC, map[string]Totals{
			"2026-11-29": {Input: 1157, Output: 8, CacheRead: 10, Cost: 1.3, Runs: 2, Errors: 1},
			"2026-12-01": {Runs: 1}}},
		{ByDay, berlin, map[string]Totals{
			"2026-11-29": {Input: 150, Output: 7, CacheRead: 10, Cost: 0.30000000000000004, Runs: 1},
			"2026-11-30": {Input: 1007, Output: 1, Cost: 1, Runs: 1, Errors: 1},
			"2026-12-01": {Runs: 1}}},
		{ByWeek, berlin, map[string]Totals{
			"2026-11-23": {Input: 150, Output: 7, CacheRead: 10, Cost: 0.30000000000000004, Runs: 1},
			"2026-11-30": {Input: 1007, Output: 1, Cost: 1, Runs: 2, Errors: 1}}},
		{ByMonth, berlin, map[string]Totals{
			"2026-11": {Input: 1157, Output: 8, CacheRead: 10, Cost: 1.3, Runs: 2, Errors: 1},
			"2026-12": {Runs: 1}}},
		{BySession, time.UTC, map[string]Totals{
			"s1": {Input: 1157, Output: 8, CacheRead: 10, Cost: 1.3, Runs: 2, Errors: 1},
			"s2": {Runs: 1}}},
		{ByProject, time.UTC, map[string]Totals{
			"api": {Input: 1157, Output: 8, CacheRead: 10, Cost: 1.3, Runs: 2, Errors: 1},
			None:  {Runs: 1}}},
		{ByTeam, time.UTC, map[string]Totals{None: want}},
		// The usage entry has no model: it goes to the root's, else none.
		{ByModel, time.UTC, map[string]Totals{
			"m1": {Input: 100, Output: 5, CacheRead: 10, Cost: 0.1, Runs: 1},
			"m2": {Input: 57, Output: 3, Cost: 0.5, Runs: 2, Errors: 1},
			None: {Input: 1000, Cost: 0.7, Runs: 2, Errors: 1}}},
		{BySkill, time.UTC, map[string]Totals{
			"pdf": {Input: 57, Output: 3, Cost: 0.5, Runs: 2, Errors: 1},
			None:  {Input: 1100, Output: 5, CacheRead: 10, Cost: 0.8, Runs: 3, Errors: 1}}},
	} {
		tab := traceRuns(t, Options{By: tc.by, Loc: tc.loc}, testRuns()...).Table()
		if tab.Total != want {
			t.Errorf("--by %s: total %+v, want %+v", tc.by, tab.Total, want)
		}
		got := rowsOf(tab)
		for k, w := range tc.rows {
			if g := got[k]; g.Input != w.Input || g.Output != w.Output || g.CacheRead != w.CacheRead ||
				g.Runs != w.Runs || g.Errors != w.Errors || !near(g.Cost, w.Cost) {
				t.Errorf("--by %s (%s): row %q is %+v, want %+v", tc.by, tc.loc, k, g, w)
			}
		}
		if len(got) != len(tc.rows) {
			t.Errorf("--by %s (%s): rows %v, want %v", tc.by, tc.loc, got, tc.rows)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-12 && d > -1e-12 }

// Since is in, until is out, both by the run's start, at the instant.
func TestBounds(t *testing.T) {
	runs := testRuns()
	for _, tc := range []struct {
		since, until time.Time
		runs         int64
	}{
		{runs[1].start, time.Time{}, 2},
		{runs[1].start.Add(time.Nanosecond), time.Time{}, 1},
		{time.Time{}, runs[1].start, 1},
		{time.Time{}, runs[1].start.Add(time.Nanosecond), 2},
		{runs[0].start, runs[2].start, 2},
	} {
		c := traceRuns(t, Options{Since: tc.since, Until: tc.until}, runs...)
		if got := c.Table().Total.Runs; got != tc.runs {
			t.Errorf("since %s until %s: %d runs, want %d", tc.since, tc.until, got, tc.runs)
		}
		if st := c.Stats(); st.Runs != 3 || st.Outside != 3-tc.runs {
			t.Errorf("since %s until %s: stats %+v", tc.since, tc.until, st)
		}
	}
}

// Dates are days in the zone given; durations go back from now; until a
// date takes the whole day.
func TestParseBound(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v     string
		loc   *time.Location
		until bool
		want  time.Time
	}{
		{"2026-12-01", time.UTC, false, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"20261201", time.UTC, false, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-12-01", berlin, false, time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)},
		{"2026-12-01", berlin, true, time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)},
		{"2026-12-01T15:04", berlin, true, time.Date(2026, 12, 1, 14, 4, 0, 0, time.UTC)},
		{"2026-12-01T15:04:05Z", berlin, false, time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC)},
		{"7d", berlin, false, now.Add(-7 * 24 * time.Hour)},
		{"2w", time.UTC, false, now.Add(-14 * 24 * time.Hour)},
		{"90m", time.UTC, true, now.Add(-90 * time.Minute)},
		{"", time.UTC, false, time.Time{}},
	} {
		got, err := ParseBound(tc.v, now, tc.loc, tc.until)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("%q in %s (until %v): %s, %v; want %s", tc.v, tc.loc, tc.until, got, err, tc.want)
		}
	}
	for _, bad := range []string{"yesterday", "-7d", "2026-13-01", "7x", "1.5d"} {
		if _, err := ParseBound(bad, now, time.UTC, false); err == nil {
			t.Errorf("%q was taken", bad)
		}
	}
	if _, err := ParseZone("Mars/Olympus"); err == nil {
		t.Error("an unknown zone was taken")
	}
	if l, err := ParseZone("utc"); err != nil || l != time.UTC {
		t.Errorf("utc: %v, %v", l, err)
	}
}

// A row's costs add up exactly, whatever the order: 0.1 ten times is 1.
func TestCostsAddUpExactly(t *testing.T) {
	sum := func(vs []float64) float64 {
		a := newAcc()
		for _, v := range vs {
			a.add(usage{cost: v})
		}
		return a.totals().Cost
	}
	vs := []float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}
	var naive float64
	for _, v := range vs {
		naive += v
	}
	if naive == 1 {
		t.Fatal("the naive sum is exact: the test proves nothing")
	}
	if got := sum(vs); got != 1 {
		t.Errorf("sum = %v, want 1", got)
	}
	if got := sum([]float64{1e300, 1, -1e300}); got != 1 {
		t.Errorf("the sum lost the 1: %v", got)
	}
}

// Spans that are not a run of Pi's (a trace of its own, a nested run
// alone) are not counted as runs; their calls are counted as loose.
func TestLooseCalls(t *testing.T) {
	c := NewCollector(Options{})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(c))
	ctx, comp := tp.Tracer("t").Start(context.Background(), vocab.SpanCompaction)
	_, chat := tp.Tracer("t").Start(ctx, "chat m")
	chat.SetAttributes(append(usageAttrs(spend{input: 5, cost: 1}), vocab.GenAIOperationNameKey.String("chat"))...)
	chat.End()
	comp.End()
	if tab, st := c.Table(), c.Stats(); tab.Total.Runs != 0 || tab.Total.Cost != 0 || st.Loose != 1 {
		t.Errorf("total %+v, stats %+v", tab.Total, st)
	}
}

// A run traced again after a failed export is counted once: its second
// tracing's spans say pi.retraced, and the report leaves them out.
func TestRetracedRunsCountOnce(t *testing.T) {
	once := traceRuns(t, Options{By: ByModel}, testRuns()...).Table()
	runs := testRuns()
	for _, r := range testRuns() {
		r.retraced = true
		runs = append(runs, r)
	}
	twice := traceRuns(t, Options{By: ByModel}, runs...)
	if got := twice.Table(); got.Total != once.Total || len(got.Rows) != len(once.Rows) {
		t.Errorf("with the runs traced again: total %+v, want %+v", got.Total, once.Total)
	}
	if st := twice.Stats(); st.Loose != 0 {
		t.Errorf("retraced calls counted as loose: %+v", st)
	}
}

func TestParseGrouping(t *testing.T) {
	if g, err := ParseGrouping("Model"); err != nil || g != ByModel {
		t.Errorf("Model: %v %v", g, err)
	}
	if _, err := ParseGrouping("year"); err == nil || !strings.Contains(err.Error(), "day, week, month") {
		t.Errorf("year: %v", err)
	}
}

// The Collector's sampler records what it reads: with it, every
// grouping's table is the one all spans give, and a grouping that does
// not split runs has only their roots recorded.
func TestSamplerRecordsWhatIsRead(t *testing.T) {
	for _, by := range Groupings() {
		opts := Options{By: by, Loc: berlin}
		want := traceRuns(t, opts, testRuns()...).Table()
		c := NewCollector(opts)
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(c.Sampler(sdktrace.ParentBased(sdktrace.AlwaysSample()))),
			sdktrace.WithSpanProcessor(c), sdktrace.WithSpanProcessor(rec))
		if got := traceInto(c, tp, testRuns()...).Table(); !reflect.DeepEqual(got, want) {
			t.Errorf("--by %s with the sampler:\n%+v\nwith every span:\n%+v", by, got, want)
		}
		ended, roots := rec.Ended(), 0
		for _, s := range ended {
			if !s.Parent().IsValid() {
				roots++
			}
		}
		if split := by.split(); split == (roots == len(ended)) {
			t.Errorf("--by %s (split %v): %d spans recorded, %d of them roots", by, split, len(ended), roots)
		}
	}
	// What the sampler it narrows drops stays dropped.
	unsampled := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Remote: true}))
	s := NewCollector(Options{By: BySession}).Sampler(sdktrace.ParentBased(sdktrace.AlwaysSample()))
	if d := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: unsampled, TraceID: trace.TraceID{1}}).Decision; d != sdktrace.Drop {
		t.Errorf("a root below an unsampled parent: %v, want Drop", d)
	}
}
