package operator_test

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/collector/collectortest"
	"github.com/pi-otel/pi-otel/dashboards/queries"
	"github.com/pi-otel/pi-otel/metrics"
	"github.com/pi-otel/pi-otel/metrics/metricstest"
)

// workload covers every metric, label and label value the dashboards and alerts select on.
func workload(i int) metricstest.Run {
	turn := func(tool string, toolErr bool, chatErr string) metricstest.Turn {
		return metricstest.Turn{
			Chat: metricstest.Chat{InputTokens: 1500, OutputTokens: 200, Cost: 0.02,
				TimeToFirstChunk: 700 * time.Millisecond, Duration: 3 * time.Second, ErrorType: chatErr},
			Tools: []metricstest.Tool{{Name: tool, Error: toolErr, Duration: 300 * time.Millisecond}},
		}
	}
	runs := []metricstest.Run{
		{Outcome: "ok", Provider: "anthropic", Model: "claude-test",
			Turns:       []metricstest.Turn{turn("bash", false, ""), turn("read", true, "")},
			Retries:     []string{"failed", "success"},
			Compactions: []metricstest.Compaction{{Reason: "threshold", Outcome: "ok"}},
			RPC:         []metricstest.RPC{{Command: "prompt", Success: true}},
			Dialogs: []metricstest.Dialog{
				{Method: "confirm", Outcome: "confirmed", Wait: 4 * time.Second},
				{Method: "select", Outcome: "timed_out", Wait: 400 * time.Second},
			}},
		{Outcome: "error", Provider: "openai", Model: "gpt-test",
			Turns:       []metricstest.Turn{turn("edit", false, "server_error")},
			Retries:     []string{"exhausted"},
			Compactions: []metricstest.Compaction{{Reason: "overflow", Outcome: "error"}},
			RPC:         []metricstest.RPC{{Command: "set_model", Success: false}}},
		{Outcome: "unsettled", Provider: "anthropic", Model: "claude-test",
			Turns:       []metricstest.Turn{turn("bash", true, "")},
			Compactions: []metricstest.Compaction{{Reason: "threshold", Outcome: "unfinished"}}},
	}
	return runs[i%len(runs)]
}

// TestDashboardAndAlertNamesExistInPrometheus produces metrics the way production does — spans
// through pi-otel's metrics package and OTLP (delta) into agent → gateway, spanmetrics at the
// gateway, a real Prometheus scraping the gateway — and then checks that every metric, label,
// matcher value and grouping label a dashboard or rule references exists there, and that every
// expression evaluates without error.
func TestDashboardAndAlertNamesExistInPrometheus(t *testing.T) {
	t.Parallel()
	stack := collectortest.StartStack(t, collectortest.StackOptions{SamplePercentage: "0"})
	rules, err := filepath.Glob(collectortest.RepoFile(t, "dashboards/alerts/*.rules.yml"))
	if err != nil || len(rules) == 0 {
		t.Fatalf("rule files: %v", err)
	}
	prom := startPrometheus(t, stack.GatewayMetrics, stack.GatewayTelemetry, rules)
	ctx := context.Background()

	// Three short pi-otel processes, each with its own service.instance.id as required for
	// per-process metrics (docs/operations.md, "Temporality").
	for i := range 3 {
		p := startPiOtel(t, piOtelOptions{
			endpoint: stack.AgentOTLP, temporality: deltaPreference, traces: true,
			instanceID: fmt.Sprintf("names-%d", i),
			health: func() metrics.Health {
				return metrics.Health{RecordsRead: 40, RecordsMalformed: 1, SpansEnded: 12, SpansExported: 11, SpansDropped: 1, ExportFailures: 1}
			},
		})
		metricstest.Emit(ctx, p.tracer, workload(i))
		p.shutdown(t)
	}

	all := loadQueries(t)
	recorded := recordedMetrics(t, rules)
	// Every selector on a raw metric must come to select data: metric name, label names and
	// matcher values all real. The pipeline is asynchronous (batching, spanmetrics flushes,
	// scrapes), so wait for data rather than look once.
	pending := map[string]string{} // selector → a query using it
	for _, q := range all {
		r, err := queries.Parse(q.Expr)
		if err != nil {
			t.Fatalf("%s: %v", q.Source, err)
		}
		for _, sel := range r.Selectors {
			if _, ok := recorded[sel.Metric]; !ok {
				pending[sel.Text] = q.Source
			}
		}
	}
	collectortest.Eventually(t, 90*time.Second, func() bool {
		for sel := range pending {
			if len(prom.query(t, "count("+sel+")")) > 0 {
				delete(pending, sel)
			}
		}
		return len(pending) == 0
	}, func() string { return fmt.Sprintf("selectors that never selected data: %v", pending) })
	series := prom.series(t)
	logNames(t, series)

	for _, q := range all {
		r, _ := queries.Parse(q.Expr)
		labelsOf := map[string]bool{}
		for _, sel := range r.Selectors {
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
			if !labelsOf[g] {
				t.Errorf("%s: groups by %s, which none of %v carries", q.Source, g, r.Metrics())
			}
		}
		var data any
		prom.api(t, "/api/v1/query", url.Values{"query": {q.Expr}}, &data) // fails the test on a query error
	}

	// Exemplars: the chat latency panel links points to traces through them. The spanmetrics
	// connector exposes an exemplar only until its next flush, so keep a process sending chat
	// spans until Prometheus has stored one of their trace ids.
	live := startPiOtel(t, piOtelOptions{endpoint: stack.AgentOTLP, temporality: deltaPreference, traces: true, instanceID: "names-live"})
	defer live.shutdown(t)
	ours := map[string]bool{}
	collectortest.Eventually(t, 60*time.Second, func() bool {
		ours[metricstest.Emit(ctx, live.tracer, workload(0)).TraceID().String()] = true
		live.flush(t)
		var ex []struct {
			Exemplars []struct {
				Labels map[string]string `json:"labels"`
			} `json:"exemplars"`
		}
		now := time.Now()
		prom.api(t, "/api/v1/query_exemplars", url.Values{
			"query": {`traces_span_metrics_duration_seconds_bucket{span_name=~"chat .+"}`},
			"start": {fmt.Sprint(now.Add(-10 * time.Minute).Unix())}, "end": {fmt.Sprint(now.Add(time.Minute).Unix())},
		}, &ex)
		for _, s := range ex {
			for _, e := range s.Exemplars {
				if ours[e.Labels["trace_id"]] {
					return true
				}
			}
		}
		return false
	}, func() string { return "no chat latency exemplar in Prometheus carries one of our trace ids" })

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
	if loaded["pi-otel-alerts"] != 9 || loaded["pi-otel-sdk-increments"] != 9 {
		t.Errorf("Prometheus loaded rule groups %v, want pi-otel-alerts and pi-otel-sdk-increments with 9 rules each", loaded)
	}
}

func loadQueries(t *testing.T) []queries.Query {
	t.Helper()
	var all []queries.Query
	dash, err := filepath.Glob(collectortest.RepoFile(t, "dashboards/grafana/dashboards/*.json"))
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
	rules, _ := filepath.Glob(collectortest.RepoFile(t, "dashboards/alerts/*.rules.yml"))
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
			out[q.Record] = map[string]bool{}
			for _, l := range labels {
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
