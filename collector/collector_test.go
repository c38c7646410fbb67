//go:build realstack

package collector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/telemetry/metrics/metricstest"
	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
)

// TestShippedConfigsValidate runs `validate` on every shipped config, with the defaults the
// containers use and with the loopback overrides the tests use.
func TestShippedConfigsValidate(t *testing.T) {
	for _, name := range []string{"agent.yaml", "gateway.yaml", "jaeger.yaml"} {
		t.Run(name, func(t *testing.T) {
			path := collectortest.RepoFile(t, "collector/"+name)
			if err := collectortest.Validate(t, path, nil); err != nil {
				t.Errorf("defaults: %v", err)
			}
			loop := map[string]string{
				"PI_OTEL_SAMPLE_PERCENTAGE":  "0",
				"PI_OTEL_TAIL_DECISION_WAIT": "1s",
			}
			if err := collectortest.Validate(t, path, loop); err != nil {
				t.Errorf("test overrides: %v", err)
			}
		})
	}
}

// TestValidateRejectsBrokenConfig proves the validation above can fail.
func TestValidateRejectsBrokenConfig(t *testing.T) {
	path := collectortest.RepoFile(t, "collector/gateway.yaml")
	if err := collectortest.Validate(t, path, map[string]string{"PI_OTEL_SAMPLE_PERCENTAGE": "not-a-number"}); err == nil {
		t.Error("validate accepted sampling_percentage=not-a-number")
	}
}

// TestTailSamplingThroughAgentAndGateway sends real OTLP spans through agent → gateway → Jaeger
// (and a second Jaeger in Tempo's place) with a baseline sampling fraction of 0 and checks that
// whole traces with an error, a retry or a compaction are kept in both backends and plain OK runs
// are dropped.
func TestTailSamplingThroughAgentAndGateway(t *testing.T) {
	stack := collectortest.StartStack(t, collectortest.StackOptions{SamplePercentage: "0", DecisionWait: "1s"})

	ctx := context.Background()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(stack.AgentOTLP), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "pi-otel"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSyncer(exp))
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

	for _, b := range []*collectortest.Backend{stack.Jaeger, stack.Tempo} {
		for i, k := range kept {
			id := keptIDs[i]
			var names []string
			collectortest.Eventually(t, 60*time.Second, func() bool {
				names = spanNames(t, b, id)
				return len(names) >= k.spans
			}, func() string {
				return fmt.Sprintf("%s: trace %s (%s) has spans %v, want %d\ngateway:\n%s", b.Proc.Name, id, k.name, names, k.spans, stack.Gateway.Logs())
			})
			if len(names) != k.spans {
				t.Errorf("%s: %s trace has %d spans %v, want %d", b.Proc.Name, k.name, len(names), names, k.spans)
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
	for _, b := range []*collectortest.Backend{stack.Jaeger, stack.Tempo} {
		for _, id := range dropped {
			if names := spanNames(t, b, id); len(names) != 0 {
				t.Errorf("%s kept plain OK trace %s: %v", b.Proc.Name, id, names)
			}
		}
	}
}

// spanNames returns the span names Jaeger stores for id (none when it has no such trace).
func spanNames(t *testing.T, b *collectortest.Backend, id trace.TraceID) []string {
	t.Helper()
	code, body := collectortest.Get(t, "http://"+b.Query+"/api/v3/traces/"+id.String())
	if code == http.StatusNotFound {
		return nil
	}
	if code != http.StatusOK {
		t.Fatalf("%s: GET trace %s: %d %s", b.Proc.Name, id, code, body)
	}
	var doc struct {
		Result struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						Name string `json:"name"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s: trace %s: %v: %s", b.Proc.Name, id, err, body)
	}
	var names []string
	for _, rs := range doc.Result.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				names = append(names, s.Name)
			}
		}
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
