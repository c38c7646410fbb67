//go:build realstack

package collector_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.yaml.in/yaml/v3"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/metricstest"
	"github.com/pi-otel/pi-otel/internal/testutil/otelcol"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// TestShippedConfigsValidate runs `validate` on every shipped config, with the defaults the
// containers use and with the loopback overrides the tests use.
func TestShippedConfigsValidate(t *testing.T) {
	for name, binary := range map[string]func(testing.TB) string{
		"agent.yaml":     collectortest.Binary,
		"agent-dns.yaml": collectortest.Binary,
		"gateway.yaml":   collectortest.Binary,
		"jaeger.yaml":    jaegertest.Binary,
	} {
		t.Run(name, func(t *testing.T) {
			bin := binary(t)
			path := repo.Path("collector/" + name)
			if err := otelcol.Validate(t, bin, path, nil); err != nil {
				t.Errorf("defaults: %v", err)
			}
			loop := map[string]string{
				"PI_OTEL_SAMPLE_PERCENTAGE":  "0",
				"PI_OTEL_TAIL_DECISION_WAIT": "1s",
				"PI_OTEL_GATEWAYS":           "[127.0.0.1:14317, 127.0.0.1:24317]",
				"PI_OTEL_AGENT_QUEUE_DIR":    t.TempDir(),
			}
			if err := otelcol.Validate(t, bin, path, loop); err != nil {
				t.Errorf("test overrides: %v", err)
			}
		})
	}
}

// TestGatewayLogsOverlayValidates: the gateway with its logs pipeline merged over it.
func TestGatewayLogsOverlayValidates(t *testing.T) {
	gw, logs := repo.Path("collector/gateway.yaml"), repo.Path("collector/gateway-logs.yaml")
	if err := otelcol.Validate(t, collectortest.Binary(t), gw, map[string]string{"PI_OTEL_LOGS_ENDPOINT": "http://logs:4318"}, logs); err != nil {
		t.Error(err)
	}
}

// TestValidateRejectsBrokenConfig proves the validation above can fail.
func TestValidateRejectsBrokenConfig(t *testing.T) {
	path := repo.Path("collector/gateway.yaml")
	if err := otelcol.Validate(t, collectortest.Binary(t), path, map[string]string{"PI_OTEL_SAMPLE_PERCENTAGE": "not-a-number"}); err == nil {
		t.Error("validate accepted sampling_percentage=not-a-number")
	}
	agent := repo.Path("collector/agent.yaml")
	if err := otelcol.Validate(t, collectortest.Binary(t), agent, map[string]string{"PI_OTEL_AGENT_QUEUE_SIZE": "lots"}); err == nil {
		t.Error("validate accepted queue_size=lots")
	}
}

// TestTailSamplingThroughAgentAndGateway sends real OTLP spans through agent → gateway → Jaeger
// (and a second Jaeger in Tempo's place) with a baseline sampling fraction of 0 and checks that
// whole traces with an error, a retry or a compaction are kept in both backends and plain OK runs
// are dropped.
func TestTailSamplingThroughAgentAndGateway(t *testing.T) {
	t.Parallel()
	stack := collectortest.StartStack(t, collectortest.StackOptions{SamplePercentage: "0", DecisionWait: "1s"})

	ctx := context.Background()
	tp := collectortest.Sender(t, stack.AgentOTLP, "pi-otel")
	defer tp.Shutdown(ctx)
	tracer := tp.Tracer("tailsampling-test")

	okTurn := metricstest.Turn{
		Chat:  metricstest.Chat{InputTokens: 100, OutputTokens: 20, Duration: time.Second},
		Tools: []metricstest.Tool{{Name: "bash", Duration: 100 * time.Millisecond}},
	}
	plain := metricstest.Run{Outcome: "ok", Provider: "p", Model: "m", Turns: []metricstest.Turn{okTurn}}

	type want struct {
		name  string
		run   metricstest.Run
		spans int // the whole tree, not just the span that made it interesting
	}
	kept := []want{
		{"chat error", metricstest.Run{Outcome: "error", Provider: "p", Model: "m", Turns: []metricstest.Turn{
			{Chat: metricstest.Chat{InputTokens: 100, Duration: time.Second, ErrorType: "server_error"}},
		}}, 4},
		{"tool error in an ok run", metricstest.Run{Outcome: "ok", Provider: "p", Model: "m", Turns: []metricstest.Turn{
			{Chat: okTurn.Chat, Tools: []metricstest.Tool{{Name: "read", Error: true, Duration: time.Millisecond}}},
		}}, 5},
		{"successful retry", metricstest.Run{Outcome: "ok", Provider: "p", Model: "m", Turns: []metricstest.Turn{okTurn}, Retries: []string{"success"}}, 6},
		{"compaction", metricstest.Run{Outcome: "ok", Provider: "p", Model: "m", Turns: []metricstest.Turn{okTurn},
			Compactions: []metricstest.Compaction{{Reason: "threshold", Outcome: "ok"}}}, 6},
	}

	const plainRuns = 30
	var dropped []trace.TraceID
	for range plainRuns {
		dropped = append(dropped, metricstest.Emit(ctx, tracer, plain).TraceID())
	}
	var keptIDs []trace.TraceID
	for _, k := range kept {
		keptIDs = append(keptIDs, metricstest.Emit(ctx, tracer, k.run).TraceID())
	}
	if err := tp.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}

	for _, b := range []*jaegertest.Jaeger{stack.Jaeger, stack.Tempo} {
		for i, k := range kept {
			id := keptIDs[i]
			var names []string
			collectortest.Eventually(t, 60*time.Second, func() bool {
				names = spanNames(t, b, id)
				return len(names) >= k.spans
			}, func() string {
				return fmt.Sprintf("%s: trace %s (%s) has spans %v, want %d\ngateway:\n%s", b.Name, id, k.name, names, k.spans, stack.Gateway.Logs())
			})
			if len(names) != k.spans {
				t.Errorf("%s: %s trace has %d spans %v, want %d", b.Name, k.name, len(names), names, k.spans)
			}
		}
	}

	// Every plain trace must have been decided (not merely still waiting) before its absence
	// means anything: the gateway's own counters say how many traces each decision covered.
	var notSampled float64
	collectortest.Eventually(t, 60*time.Second, func() bool {
		notSampled = tailSampled(t, stack.GatewayTelemetry, "false")
		return notSampled >= plainRuns
	}, func() string {
		return fmt.Sprintf("gateway decided %v traces as not sampled, want %d", notSampled, plainRuns)
	})
	if sampled := tailSampled(t, stack.GatewayTelemetry, "true"); sampled != float64(len(kept)) {
		t.Errorf("gateway sampled %v traces, want %d", sampled, len(kept))
	}
	for _, b := range []*jaegertest.Jaeger{stack.Jaeger, stack.Tempo} {
		for _, id := range dropped {
			if names := spanNames(t, b, id); len(names) != 0 {
				t.Errorf("%s kept plain OK trace %s: %v", b.Name, id, names)
			}
		}
	}
}

// spanNames returns the span names Jaeger stores for id (none when it has no such trace).
func spanNames(t *testing.T, b *jaegertest.Jaeger, id trace.TraceID) []string {
	t.Helper()
	tr, err := b.Trace(context.Background(), id.String())
	if errors.Is(err, jaegertest.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("%s: trace %s: %v", b.Name, id, err)
	}
	var names []string
	for _, s := range tr.Spans {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

var tailMetric = regexp.MustCompile(`(?m)^otelcol_processor_tail_sampling_global_count_traces_sampled(?:_total)?\{([^}]*)\} ([0-9.e+]+)`)

// tailSampled sums the gateway's global tail-sampling decisions with the given sampled label.
func tailSampled(t *testing.T, telemetry, sampled string) float64 {
	t.Helper()
	code, body := collectortest.Get(t, "http://"+telemetry+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("gateway telemetry: %d", code)
	}
	var sum float64
	for _, m := range tailMetric.FindAllStringSubmatch(string(body), -1) {
		if strings.Contains(m[1], `sampled="`+sampled+`"`) {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
		}
	}
	return sum
}

// TestDistributionHoldsExactlyWhatConfigsUse asks the built pi-otel-collector which components it
// holds and checks them against the shipped configs both ways (no component the configs do not
// use, none missing), against collector/builder-config.yaml, and that all sit at one release.
func TestDistributionHoldsExactlyWhatConfigsUse(t *testing.T) {
	out, err := exec.Command(collectortest.Binary(t), "components").Output()
	if err != nil {
		t.Fatalf("components: %v", err)
	}
	type component struct{ Name, Module string }
	var doc struct {
		Receivers, Processors, Exporters, Connectors, Extensions []component
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("components output: %v\n%s", err, out)
	}
	kinds := []string{"receivers", "processors", "exporters", "connectors", "extensions"}
	built := map[string][]component{
		"receivers": doc.Receivers, "processors": doc.Processors, "exporters": doc.Exporters,
		"connectors": doc.Connectors, "extensions": doc.Extensions,
	}
	have, modules, releases := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, kind := range kinds {
		for _, c := range built[kind] {
			have[kind+"/"+c.Name] = true
			modules[c.Module] = true
			f := strings.Fields(c.Module)
			releases[f[len(f)-1]] = true
		}
	}
	if len(releases) != 1 {
		t.Errorf("components at several releases: %v", releases)
	}

	used := map[string]bool{}
	for _, file := range []string{"agent.yaml", "agent-dns.yaml", "gateway.yaml", "gateway-logs.yaml"} {
		raw, err := os.ReadFile(repo.Path("collector/" + file))
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := yaml.Unmarshal(raw, &cfg); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, kind := range kinds {
			m, _ := cfg[kind].(map[string]any)
			for id := range m {
				typ, _, _ := strings.Cut(id, "/")
				used[kind+"/"+typ] = true
				if !have[kind+"/"+typ] {
					t.Errorf("%s uses %s %s, which pi-otel-collector lacks", file, kind, typ)
				}
			}
		}
	}
	for c := range have {
		if !used[c] {
			t.Errorf("pi-otel-collector holds %s, which no shipped config uses", c)
		}
	}

	var builder map[string]any
	raw, err := os.ReadFile(repo.Path("collector/builder-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &builder); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, kind := range kinds {
		items, _ := builder[kind].([]any)
		for _, it := range items {
			listed[it.(map[string]any)["gomod"].(string)] = true
		}
	}
	for m := range modules {
		if !listed[m] {
			t.Errorf("pi-otel-collector holds %s, not in builder-config.yaml: the binary is stale", m)
		}
	}
	for m := range listed {
		if !modules[m] {
			t.Errorf("builder-config.yaml lists %s, not in pi-otel-collector: the binary is stale", m)
		}
	}
}
