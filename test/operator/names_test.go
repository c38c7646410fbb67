//go:build realstack

package operator_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/piotel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/queries"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
)

// TestDashboardAndAlertNamesExistInPrometheus runs the real pi-otel binary on real scenarios —
// a replay of every real Pi capture, each its own short-lived process, and a real Pi RPC session
// with extension dialogs through `pi-otel rpc` — into the real agent → gateway Collectors and a
// real Prometheus scraping the gateway. It then checks that every metric, label, matcher value
// and grouping label a dashboard or rule references exists there, that every expression
// evaluates, and that the numbers add up: one series per process, pi-otel's health counters and
// cost equal to what the captures hold, spanmetrics and pi-otel counting the same runs, and the
// recording rules counting every short process's series exactly once.
//
// It runs once per GenAI conventions mode, each on a fresh stack: the same dashboards and rules
// must select real data whichever names the processes send, and the other mode's names must
// select nothing (or the mode did not switch).
func TestDashboardAndAlertNamesExistInPrometheus(t *testing.T) {
	t.Parallel()
	for _, mode := range semconvModes {
		t.Run(mode.name, func(t *testing.T) { dashboardNamesInMode(t, mode) })
	}
}

func dashboardNamesInMode(t *testing.T, mode semconvMode) {
	began := time.Now()
	// The RPC session needs the real Pi and Node: fail now, not after the replays, without them.
	pitest.Lookup(t, pitest.EnvPi)
	pitest.Lookup(t, pitest.EnvNodeDir)
	bin := piotel.Binary(t)
	caps := captureFiles(t)
	t.Logf("pi-otel binary ready in %v", time.Since(began).Round(time.Millisecond))
	// The Tempo stand-in is stopped and the gateway does not retry: its otlp_grpc/tempo export of
	// the kept traces fails for real, the only way otelcol_exporter_send_failed_spans_total
	// (PiOtelGatewayLosingData) comes to exist: Collector v0.161 creates the series with the
	// first failure.
	stack := collectortest.StartStack(t, collectortest.StackOptions{SamplePercentage: "0",
		GatewayEnv: func(int) map[string]string { return map[string]string{"PI_OTEL_GATEWAY_EXPORT_RETRY": "false"} }})
	stack.Tempo.Stop(t)
	rules, err := filepath.Glob(repo.Path("dashboards/alerts/*.rules.yml"))
	if err != nil || len(rules) == 0 {
		t.Fatalf("rule files: %v", err)
	}
	prom := startPrometheus(t, stack.GatewayMetrics, stack.GatewayTelemetry, rules)
	promStart := time.Now()

	// The RPC session runs while the replays do: short processes and a long one side by side.
	type rpcOutcome struct {
		s   *rpcSession
		err error
	}
	rpcDone := make(chan rpcOutcome, 1)
	rpcDir := t.TempDir()
	workBegan := time.Now()
	go func() {
		s, err := runRPCSession(rpcDir, bin, "http://"+stack.AgentOTLP, mode)
		rpcDone <- rpcOutcome{s, err}
	}()
	rep := replayAll(t, bin, stack, caps, mode)
	t.Logf("%d replays done in %v", rep.processes, time.Since(workBegan).Round(time.Millisecond))
	ro := <-rpcDone
	t.Logf("RPC session done in %v", time.Since(workBegan).Round(time.Millisecond))
	if ro.err != nil {
		t.Fatalf("RPC session through pi-otel rpc: %v", ro.err)
	}
	rpc := ro.s
	rpcSummary := parseSummary(t, "pi-otel rpc", []byte(rpc.result.Stderr))
	t.Logf("replays: %d records, %d spans, %.6f USD; RPC session: %q, %.6f USD", rep.records, rep.spans, rep.cost, rpcSummary.Line, rpc.cost)

	all := loadQueries(t)
	recorded := recordedMetrics(t, rules)
	// Every selector on a raw metric must come to select data: metric name, label names and
	// matcher values all real. The pipeline is asynchronous (batching, spanmetrics flushes,
	// scrapes), so wait for data rather than look once.
	pending := map[string]string{} // selector → a query using it
	foreign := map[string]string{} // selectors of the other conventions mode's metrics
	usedSynthetic := map[string]bool{}
	for _, q := range all {
		r, err := queries.Parse(q.Expr)
		if err != nil {
			t.Fatalf("%s: %v", q.Source, err)
		}
		own := 0
		for _, sel := range r.Selectors {
			if !mode.isForeign(sel.Metric) {
				own++
			}
		}
		if own == 0 && len(r.Selectors) > 0 {
			t.Errorf("%s reads only metrics that processes in conventions mode %s never send: it is empty in that mode", q.Source, mode.name)
		}
		for _, sel := range r.Selectors {
			if _, ok := recorded[sel.Metric]; ok {
				continue
			}
			if _, ok := syntheticOnly[sel.Text]; ok {
				usedSynthetic[sel.Text] = true
				continue
			}
			if mode.isForeign(sel.Metric) {
				foreign[sel.Text] = q.Source
				continue
			}
			pending[sel.Text] = q.Source
		}
	}
	for sel := range syntheticOnly {
		if !usedSynthetic[sel] {
			t.Errorf("syntheticOnly lists %s, which no dashboard or rule uses: drop it", sel)
		}
	}
	selects := func(sel string) bool { return len(prom.query(t, "count("+sel+")")) > 0 }
	collectortest.Eventually(t, 90*time.Second, func() bool {
		for sel := range pending {
			if selects(sel) {
				delete(pending, sel)
			}
		}
		return len(pending) == 0
	}, func() string { return fmt.Sprintf("selectors that real data never satisfied: %v", pending) })

	// Real data has arrived: label names are taken from it alone. The synthetic-only selectors
	// must still be empty, or they are not synthetic-only any more. Then the supplement, and only
	// it, fills them.
	series := prom.series(t)
	logNames(t, series)
	for sel, why := range syntheticOnly {
		if selects(sel) {
			t.Errorf("real data now satisfies %s (listed as synthetic-only: %s): drop it from syntheticOnly", sel, why)
		}
	}
	if len(foreign) == 0 {
		t.Errorf("no dashboard or rule reads the metrics of the conventions mode other than %s: the other mode's processes would leave them empty", mode.name)
	}
	for sel, src := range foreign {
		if selects(sel) {
			t.Errorf("%s (%s): the other conventions mode's metric has data in mode %s", sel, src, mode.name)
		}
	}
	for name := range series {
		if mode.isForeign(name) {
			t.Errorf("Prometheus has %s, a metric of the conventions mode other than %s", name, mode.name)
		}
	}
	for _, prefix := range mode.own {
		found := false
		for name := range series {
			found = found || strings.HasPrefix(name, prefix)
		}
		if !found {
			t.Errorf("mode %s: no metric %s* in Prometheus", mode.name, prefix)
		}
	}
	sendSynthetic(t, stack.AgentOTLP)
	collectortest.Eventually(t, 60*time.Second, func() bool {
		for sel := range syntheticOnly {
			if !selects(sel) {
				return false
			}
		}
		return true
	}, func() string { return "the synthetic supplement never reached Prometheus" })

	for _, q := range all {
		r, _ := queries.Parse(q.Expr)
		labelsOf := map[string]bool{}
		for _, m := range labelReplaceDst.FindAllStringSubmatch(q.Expr, -1) {
			labelsOf[m[1]] = true // label_replace makes it
		}
		for _, sel := range r.Selectors {
			if mode.isForeign(sel.Metric) {
				continue
			}
			if labels, ok := recorded[sel.Metric]; ok {
				for _, m := range sel.Matchers {
					if !labels[m.Label] {
						t.Errorf("%s: recorded metric %s has no label %s", q.Source, sel.Metric, m.Label)
					}
				}
				for l := range labels {
					labelsOf[l] = true
				}
				continue
			}
			have := series[sel.Metric]
			for _, m := range sel.Matchers {
				if !have[m.Label] {
					t.Errorf("%s: metric %s has no label %s (it has %v)", q.Source, sel.Metric, m.Label, keys(have))
				}
			}
			for l := range have {
				labelsOf[l] = true
			}
		}
		for _, g := range r.Grouping {
			if _, ok := labelsNoCaptureHas[g]; !ok && !labelsOf[g] {
				t.Errorf("%s: groups by %s, which none of %v carries", q.Source, g, r.Metrics())
			}
		}
		var data any
		prom.api(t, "/api/v1/query", url.Values{"query": {q.Expr}}, &data) // fails the test on a query error
	}

	checkQuantities(t, prom, rep, rpc, rpcSummary, mode)
	checkRecordingRules(t, prom, repo.Path("dashboards/alerts/recording.rules.yml"), promStart, rep.cost+rpc.cost)

	// Exemplars: the chat latency panel links points to traces through them. The spanmetrics
	// connector exposes an exemplar only until its next flush, so replay a capture again (a
	// new process, a new trace) until Prometheus has stored one of the replays' trace ids.
	ours := map[string]bool{}
	for _, id := range rep.traceIDs {
		ours[id] = true
	}
	text := repo.Path("testdata/captures/pi-1.6.0/text.jsonl")
	collectortest.Eventually(t, 60*time.Second, func() bool {
		for _, id := range exemplarTraceIDs(t, prom, `traces_span_metrics_duration_seconds_bucket{span_name=~"chat .+"}`) {
			if ours[id] {
				return true
			}
		}
		if s, ok := replay(t, bin, text, "http://"+stack.AgentOTLP, "grpc", mode); ok && s.TraceID != "" {
			ours[s.TraceID] = true
		}
		return false
	}, func() string { return "no chat latency exemplar in Prometheus carries one of the replays' trace ids" })

	// Exemplars of pi-otel's own cost and token metrics (the SDK's, through the gateway's
	// OpenMetrics endpoint): one of them names a trace the gateway kept, which Jaeger returns,
	// so a spike on a cost panel leads to the run behind it.
	checkCostExemplars(t, prom, stack.Jaeger, rep.traceIDs)

	// The shipped rule files load into a real Prometheus.
	var rg struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []any  `json:"rules"`
		} `json:"groups"`
	}
	prom.api(t, "/api/v1/rules", nil, &rg)
	loaded := map[string]int{}
	for _, g := range rg.Groups {
		loaded[g.Name] = len(g.Rules)
	}
	shipped := map[string]int{}
	for _, f := range []string{"dashboards/alerts/alerts.rules.yml", "dashboards/alerts/recording.rules.yml",
		"dashboards/alerts/budgets.rules.yml", "dashboards/alerts/spend.rules.yml"} {
		var file struct {
			Groups []struct {
				Name  string `yaml:"name"`
				Rules []any  `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal(repo.Read(t, f), &file); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range file.Groups {
			shipped[g.Name] = len(g.Rules)
		}
	}
	if len(shipped) == 0 || !maps.Equal(loaded, shipped) {
		t.Errorf("Prometheus loaded rule groups %v, want the shipped files' %v", loaded, shipped)
	}
}

// checkQuantities compares what Prometheus holds with what the replays and the RPC session
// produced, counted independently of pi-otel where possible (records and cost from the captures
// and the transcript, spans from each process's own summary line).
func checkQuantities(t *testing.T, prom *promServer, rep replayed, rpc *rpcSession, rpcSummary summaryline.Summary, mode semconvMode) {
	t.Helper()
	replays := fmt.Sprintf(`{job="pi", instance!=%q}`, rpcInstance)
	session := fmt.Sprintf(`{job="pi", instance=%q}`, rpcInstance)
	value := func(q string) float64 { return prom.one(t, q) }
	// 0 while nothing is there yet, for waiting.
	sofar := func(q string) float64 {
		var v float64
		for _, x := range prom.query(t, q) {
			v += x
		}
		return v
	}
	// Final values: each process exported at exit; wait until the last export is scraped.
	collectortest.Eventually(t, 60*time.Second, func() bool {
		return sofar(`count(count by (instance) (pi_otel_records_read_total`+replays+`))`) == float64(rep.processes) &&
			sofar(`sum(pi_otel_records_read_total`+replays+`)`) == float64(rep.records) &&
			sofar(`sum(pi_otel_spans_ended_total`+replays+`)`) == float64(rep.spans) &&
			sofar(`sum(pi_otel_spans_ended_total`+session+`)`) == float64(rpcSummary.Spans)
	}, func() string {
		return fmt.Sprintf("want %d replay processes with %d records and %d spans, and %d spans from the RPC session; Prometheus has %v processes, %v records, %v spans and %v",
			rep.processes, rep.records, rep.spans, rpcSummary.Spans,
			prom.query(t, `count(count by (instance) (pi_otel_records_read_total`+replays+`))`),
			prom.query(t, `sum(pi_otel_records_read_total`+replays+`)`),
			prom.query(t, `sum(pi_otel_spans_ended_total`+replays+`)`),
			prom.query(t, `sum(pi_otel_spans_ended_total`+session+`)`))
	})
	if v, want := value(`sum(pi_otel_spans_exported_total)`), float64(rep.spans+rpcSummary.Spans); v != want {
		t.Errorf("spans exported %v, want every span ended (%v)", v, want)
	}
	for _, q := range []string{`sum(pi_otel_spans_dropped_total)`, `sum(pi_otel_export_failures_total)`, `sum(pi_otel_records_malformed_total)`} {
		if v := value(q); v != 0 {
			t.Errorf("%s = %v, want 0", q, v)
		}
	}
	if v := value(`sum(pi_cost_total` + replays + `)`); !near(v, rep.cost) {
		t.Errorf("replays: pi_cost_total sums to %v USD; the captures' message_end and compaction_end costs sum to %v", v, rep.cost)
	}
	if v := value(`sum(pi_cost_total` + session + `)`); !near(v, rpc.cost) {
		t.Errorf("RPC session: pi_cost_total = %v USD; its transcript's costs sum to %v", v, rpc.cost)
	}
	if rpc.cost == 0 {
		t.Error("the RPC session's transcript shows no cost: the cost check above proves nothing")
	}
	// The time to first chunk of a live session is measured, not reconstructed: some is above 0.
	if v := value(`sum(` + mode.firstChunk + session + `)`); v <= 0 {
		t.Errorf("RPC session: time to first chunk sums to %v s, want > 0", v)
	}
	// So are the gaps between its output chunks; the replays, whose times are rebuilt, have none.
	if v := value(`sum(` + mode.perChunk + session + `)`); v <= 0 {
		t.Errorf("RPC session: %v chunk gaps, want some", v)
	}
	if v := sofar(`sum(` + mode.perChunk + replays + `)`); v != 0 {
		t.Errorf("replays: %v chunk gaps from times they rebuilt, want none", v)
	}

	// Runs: spanmetrics at the gateway (what the dashboard uses) and pi-otel's own counter
	// (one series per process) count the same runs by outcome.
	spanRuns := `sum by (pi_outcome) (traces_span_metrics_calls_total{service_name="pi", span_name="invoke_agent pi"})`
	sdkRuns := `sum by (pi_outcome) (pi_runs_total{job="pi"})`
	collectortest.Eventually(t, 30*time.Second, func() bool {
		a, b := prom.query(t, spanRuns), prom.query(t, sdkRuns)
		return fmt.Sprint(a) == fmt.Sprint(b)
	}, func() string {
		return fmt.Sprintf("runs by outcome: spanmetrics %v, pi-otel %v", prom.query(t, spanRuns), prom.query(t, sdkRuns))
	})
	for _, o := range []string{"ok", "error", "unsettled"} {
		if prom.query(t, sdkRuns)["pi_outcome="+o] == 0 {
			t.Errorf("no run ended %s: the real scenarios should produce every outcome the alerts select", o)
		}
	}
}

// checkRecordingRules evaluates every recording rule of file, as written, on its group's own
// interval from before the first series to after the last sample — the evaluations Prometheus
// makes, done at once through query_range instead of waiting up to a minute for the group's
// slot — and checks that summing the increments, as the dashboard's sum_over_time does, gives
// each raw metric's total over all processes: every short process's series counted once, whole,
// and the long session's growth counted too. The cost rule must also total what Pi itself
// charged (wantCost).
func checkRecordingRules(t *testing.T, prom *promServer, file string, promStart time.Time, wantCost float64) {
	t.Helper()
	rf, err := queries.LoadRules(file)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	checked := 0
	for _, g := range rf.Groups {
		step, err := time.ParseDuration(g.Interval)
		if err != nil || step <= 0 {
			t.Fatalf("group %s: interval %q: %v", g.Name, g.Interval, err)
		}
		// The first evaluation precedes every series, one is now, and two more follow: later
		// evaluations see the same final samples (well within the 5m lookback), as they would
		// while the exporter keeps exposing the series, so a rule that counted a series again
		// at each evaluation would be caught.
		n := int(now.Sub(promStart)/step) + 2
		start, end := now.Add(-time.Duration(n)*step), now.Add(2*step)
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			refs, err := queries.Parse(r.Expr)
			if err != nil || len(refs.Selectors) == 0 {
				t.Fatalf("%s: %v", r.Record, err)
			}
			var total float64
			for _, vs := range prom.queryRange(t, r.Expr, start, end, step) {
				for _, v := range vs {
					total += v
				}
			}
			// A rule reading both conventions modes' series sums them all.
			raw := strings.Join(refs.Metrics(), " + ")
			var want float64
			for _, m := range refs.Metrics() {
				for _, v := range prom.queryAt(t, "sum("+m+")", now) {
					want += v
				}
			}
			if !near(total, want) {
				t.Errorf("%s: increments over the run sum to %v, want %v (the total of %s over all processes)", r.Record, total, want, raw)
			}
			if r.Record == "pi:cost_usd:increase1m" && !near(total, wantCost) {
				t.Errorf("%s: increments sum to %v USD, want %v (what Pi charged in the captures and the session)", r.Record, total, wantCost)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Errorf("%s has no recording rules", file)
	}
}

// near compares sums of float costs, which differ in the last bits with the order of addition.
func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// labelReplaceDst finds the label each label_replace(v, "dst", "replacement", "src", "regex")
// of an expression makes.
var labelReplaceDst = regexp.MustCompile(`"([a-zA-Z_][a-zA-Z0-9_]*)",\s*"[^"]*",\s*"[^"]*",\s*"[^"]*"\s*\)`)

func loadQueries(t *testing.T) []queries.Query {
	t.Helper()
	var all []queries.Query
	dash, err := filepath.Glob(repo.Path("dashboards/grafana/dashboards/*.json"))
	if err != nil || len(dash) == 0 {
		t.Fatalf("dashboards: %v", err)
	}
	for _, f := range dash {
		qs, err := queries.FromDashboard(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, qs...)
	}
	rules, _ := filepath.Glob(repo.Path("dashboards/alerts/*.rules.yml"))
	for _, f := range rules {
		qs, err := queries.FromRules(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, qs...)
	}
	return all
}

// recordedMetrics maps each recording rule's output name to the labels it keeps.
func recordedMetrics(t *testing.T, files []string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	for _, f := range files {
		qs, err := queries.FromRules(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			if q.Record == "" {
				continue
			}
			labels, err := queries.RecordedLabels(q.Expr)
			if err != nil {
				t.Fatal(err)
			}
			// Several rules may record one metric (a budget per team or repository): their
			// labels add up.
			if out[q.Record] == nil {
				out[q.Record] = map[string]bool{}
			}
			for _, l := range labels {
				out[q.Record][l] = true
			}
			for l := range q.Labels {
				out[q.Record][l] = true
			}
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// logNames records the observed Prometheus names (go test -v shows them; docs/operations.md
// lists the same).
func logNames(t *testing.T, series map[string]map[string]bool) {
	var names []string
	for n := range series {
		if strings.HasPrefix(n, "pi_") || strings.HasPrefix(n, "gen_ai_") || strings.HasPrefix(n, "traces_span_metrics_") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("%s %v", n, keys(series[n]))
	}
}

// checkCostExemplars waits until Prometheus holds an exemplar on pi_cost_total or the token
// usage whose trace id is one of ids (the replays') and that Jaeger returns: the retried and
// compacted runs among the captures are the ones tail sampling keeps.
func checkCostExemplars(t *testing.T, prom *promServer, j *jaegertest.Jaeger, ids []string) {
	t.Helper()
	ours := map[string]bool{}
	for _, id := range ids {
		ours[id] = true
	}
	seen := map[string]bool{}
	collectortest.Eventually(t, 60*time.Second, func() bool {
		for _, id := range exemplarTraceIDs(t, prom, `{__name__=~"pi_cost_total|gen_ai_client_token_usage_bucket"}`) {
			if !ours[id] {
				continue
			}
			seen[id] = true // tail sampling may not have decided on it yet: asked again
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			tr, err := j.Trace(ctx, id)
			cancel()
			if err == nil && tr != nil && len(tr.Spans) > 0 {
				return true
			}
		}
		return false
	}, func() string {
		return fmt.Sprintf("no cost or token exemplar names a replayed trace Jaeger returns (exemplar trace ids of ours seen: %d)", len(seen))
	})
}

// exemplarTraceIDs are the trace ids of the exemplars Prometheus stored for query in the last ten
// minutes.
func exemplarTraceIDs(t *testing.T, prom *promServer, query string) []string {
	t.Helper()
	var ex []struct {
		Exemplars []struct {
			Labels map[string]string `json:"labels"`
		} `json:"exemplars"`
	}
	now := time.Now()
	prom.api(t, "/api/v1/query_exemplars", url.Values{
		"query": {query},
		"start": {fmt.Sprint(now.Add(-10 * time.Minute).Unix())}, "end": {fmt.Sprint(now.Add(time.Minute).Unix())},
	}, &ex)
	var ids []string
	for _, s := range ex {
		for _, e := range s.Exemplars {
			ids = append(ids, e.Labels["trace_id"])
		}
	}
	return ids
}
