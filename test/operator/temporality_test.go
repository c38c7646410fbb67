//go:build realstack

package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/metricstest"
)

// TestDeltaTemporalityThroughTheCollector measures what the Collector's prometheus exporter
// (v0.140) makes of DELTA metrics from many short-lived pi-otel processes, and that spanmetrics
// at the gateway counts them exactly. The findings are in docs/operations.md ("Temporality"):
//
//   - one long-lived writer: deltas are summed into a cumulative series (correct);
//   - many processes with the same resource: the exporter only adds a delta whose start time is
//     the previous point's time, so each new process *replaces* the sum (last writer wins) and
//     overlapping processes' histogram points are dropped as misaligned;
//   - a unique service.instance.id per process: one correct series per process, but each is
//     born holding its whole total, so rate()/increase() report nothing — hence the recording
//     rules in dashboards/alerts/recording.rules.yml;
//   - spanmetrics keyed by service at the gateway: exact, one series for all processes.
//
// If a Collector upgrade changes the second or third finding, this test fails and the docs and
// rules need revisiting.
func TestDeltaTemporalityThroughTheCollector(t *testing.T) {
	t.Parallel()
	// Straight into the gateway: its receiver → batch → exporter path keeps arrival order, which
	// the sentinel below relies on. (An agent's sending queue sends batches concurrently and may
	// reorder them, which only makes the replacing behaviour measured here less predictable.)
	stack := collectortest.StartStack(t, collectortest.StackOptions{SamplePercentage: "0", NoAgent: true})
	prom := startPrometheus(t, stack.GatewayMetrics, "", nil)
	ctx := context.Background()
	run := func(p *piOtel, model string, cost float64) {
		metricstest.Emit(ctx, p.tracer, metricstest.Run{Outcome: "ok", Provider: "p", Model: model,
			Turns: []metricstest.Turn{{Chat: metricstest.Chat{InputTokens: 10, OutputTokens: 5, Cost: cost, Duration: time.Second}}}})
	}
	start := func(instance string) *piOtel {
		return startPiOtel(t, piOtelOptions{endpoint: stack.GatewayOTLP, temporality: deltaPreference, traces: true, instanceID: instance})
	}

	// A: one process exporting three deltas of 1 USD.
	a := start("")
	for range 3 {
		run(a, "single-writer", 1)
		a.flush(t)
	}
	a.shutdown(t)

	// B: five processes one after another, same resource, costing 1..5 USD.
	for i := 1; i <= 5; i++ {
		b := start("")
		run(b, "shared-identity", float64(i))
		b.shutdown(t)
	}

	// B2: three processes alive at the same time, same resource.
	var overlap []*piOtel
	for range 3 {
		overlap = append(overlap, start(""))
	}
	for _, p := range overlap {
		run(p, "overlap", 1)
	}
	for _, p := range overlap {
		p.shutdown(t)
	}

	// C: five processes one after another, each with its own service.instance.id.
	for i := 1; i <= 5; i++ {
		c := start(fmt.Sprintf("proc-%d", i))
		run(c, "per-process", float64(i))
		c.shutdown(t)
	}

	// Everything above went through the same pipeline before the sentinel.
	s := start("")
	run(s, "sentinel", 1)
	s.shutdown(t)
	collectortest.Eventually(t, 90*time.Second, func() bool {
		return len(prom.query(t, `pi_cost_total{gen_ai_request_model="sentinel"}`)) == 1 &&
			len(prom.query(t, `traces_span_metrics_calls_total{span_name="chat sentinel"}`)) == 1
	}, func() string { return "the sentinel never reached Prometheus" })

	one := func(q string) float64 { return prom.one(t, q) }
	byModel := func(m string) string { return fmt.Sprintf(`{gen_ai_request_model=%q}`, m) }

	if v := one(`sum(pi_cost_total` + byModel("single-writer") + `)`); v != 3 {
		t.Errorf("A, one writer: pi_cost_total = %v, want 3 (deltas summed)", v)
	}
	if v := one(`sum(pi_cost_total` + byModel("shared-identity") + `)`); v != 5 {
		t.Errorf("B, five writers with one identity: pi_cost_total = %v; measured behaviour is 5 (the last process replaces the sum; the true total is 15)", v)
	}
	if v := one(`sum(gen_ai_client_token_usage_count{gen_ai_token_type="input",gen_ai_request_model="overlap"})`); v != 1 {
		t.Errorf("B2, three overlapping writers: token usage count = %v; measured behaviour is 1 (the later points are dropped as misaligned)", v)
	}
	if !strings.Contains(stack.Gateway.Logs(), "Dropped misaligned histogram datapoint") {
		t.Error("B2: the gateway did not log the dropped histogram points")
	}
	if n := len(prom.query(t, `pi_cost_total`+byModel("per-process"))); n != 5 {
		t.Errorf("C, unique service.instance.id: %d series, want one per process (5)", n)
	}
	if v := one(`sum(pi_cost_total` + byModel("per-process") + `)`); v != 15 {
		t.Errorf("C: sum over the per-process series = %v, want 15", v)
	}
	// Each per-process series is born with its total and never changes: increase() sees no growth.
	if r := prom.query(t, `sum(increase(pi_cost_total`+byModel("per-process")+`[10m]))`); len(r) != 0 && r[""] != 0 {
		t.Errorf("C: increase() = %v; measured behaviour is 0 (a series' first sample is never counted)", r)
	}

	// D: spanmetrics counts every chat span, in one series for all processes.
	for model, want := range map[string]float64{"single-writer": 3, "shared-identity": 5, "overlap": 3, "per-process": 5} {
		q := fmt.Sprintf(`traces_span_metrics_calls_total{span_name="chat %s"}`, model)
		r := prom.query(t, q)
		if len(r) != 1 {
			t.Errorf("D: %s has %d series %v, want 1 (keyed by service, not by process)", q, len(r), r)
			continue
		}
		for labels, v := range r {
			if v != want {
				t.Errorf("D: %s = %v, want %v", q, v, want)
			}
			if strings.Contains(labels, "proc-") {
				t.Errorf("D: %s carries a process's instance label: %s", q, labels)
			}
		}
	}
}
