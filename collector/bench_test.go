//go:build realstack

package collector_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/metricstest"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// The sizing figures of docs/performance.md, measured on real processes. Run with
//
//	go test -tags realstack -run '^$' -bench . -benchtime 4000x ./collector/
//
// b.N is the number of traces; each is a run of two turns, each a chat and a tool call (8 spans,
// the size of the captured Pi runs), with the attributes pi-otel sets.

// benchRun is one plain run as pi-otel's mapper shapes it.
var benchRun = metricstest.Run{Outcome: "ok", Provider: "anthropic", Model: "claude-sonnet-4", Turns: []metricstest.Turn{
	{Chat: metricstest.Chat{InputTokens: 3000, OutputTokens: 200, Duration: 2 * time.Second}, Tools: []metricstest.Tool{{Name: "bash", Duration: 300 * time.Millisecond}}},
	{Chat: metricstest.Chat{InputTokens: 3400, OutputTokens: 120, Duration: time.Second}, Tools: []metricstest.Tool{{Name: "read", Duration: 10 * time.Millisecond}}},
}}

const benchSpansPerRun = 8

// sendRuns exports n runs over OTLP/gRPC to endpoint, as many pi-otel processes would.
func sendRuns(b *testing.B, endpoint string, n int) {
	b.Helper()
	ctx := context.Background()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "pi-otel-bench"))),
		sdktrace.WithBatcher(exp, sdktrace.WithMaxQueueSize(n*benchSpansPerRun+1), sdktrace.WithMaxExportBatchSize(512)),
	)
	tracer := tp.Tracer("bench")
	for range n {
		metricstest.Emit(ctx, tracer, benchRun)
	}
	if err := tp.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
}

// received sums otelcol_receiver_accepted_spans over the given telemetry endpoints.
func received(b *testing.B, telemetry ...string) float64 {
	var sum float64
	for _, addr := range telemetry {
		sum += metricAt(b, addr, "otelcol_receiver_accepted_spans", "")
	}
	return sum
}

// BenchmarkAgentToTwoGateways measures spans per second from OTLP clients through one agent
// (persistent queue, routing by trace id) to two gateways (spanmetrics, tail sampling at 10%),
// everything on this machine's cores at once.
func BenchmarkAgentToTwoGateways(b *testing.B) {
	s := collectortest.StartStack(b, collectortest.StackOptions{Gateways: 2, SamplePercentage: "10", DecisionWait: "5s"})
	want := float64(b.N * benchSpansPerRun)
	b.ResetTimer()
	start := time.Now()
	sendRuns(b, s.AgentOTLP, b.N)
	for received(b, s.Gateways[0].Telemetry, s.Gateways[1].Telemetry) < want {
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("gateways received %v of %v spans in 10 min", received(b, s.Gateways[0].Telemetry, s.Gateways[1].Telemetry), want)
		}
		// A short, fixed poll: it bounds the error of the time measured.
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(want/elapsed.Seconds(), "spans/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkGatewayDecisionWaitMemory measures what a gateway holds per 1,000 traces waiting in
// decision_wait: b.N runs sent straight to one gateway whose decision_wait outlasts the benchmark,
// the gateway's resident set and Go heap read (its own telemetry) before and after.
func BenchmarkGatewayDecisionWaitMemory(b *testing.B) {
	s := collectortest.StartStack(b, collectortest.StackOptions{NoAgent: true, SamplePercentage: "10", DecisionWait: "30m"})
	rss0 := metricAt(b, s.GatewayTelemetry, "otelcol_process_memory_rss_bytes", "")
	heap0 := metricAt(b, s.GatewayTelemetry, "otelcol_process_runtime_heap_alloc_bytes", "")
	b.ResetTimer()
	sendRuns(b, s.GatewayOTLP, b.N)
	want := float64(b.N * benchSpansPerRun)
	if !wait.Until(10*time.Minute, func() bool { return received(b, s.GatewayTelemetry) >= want }) {
		b.Fatalf("gateway received %v of %v spans", received(b, s.GatewayTelemetry), want)
	}
	b.StopTimer()
	// Let the memory limiter's and the runtime's periodic work settle before reading.
	// Real time is the point: that work runs on the gateway's own timers.
	time.Sleep(3 * time.Second)
	rss := metricAt(b, s.GatewayTelemetry, "otelcol_process_memory_rss_bytes", "")
	heap := metricAt(b, s.GatewayTelemetry, "otelcol_process_runtime_heap_alloc_bytes", "")
	per := float64(b.N) / 1000
	b.ReportMetric((rss-rss0)/per/(1<<20), "MiB-rss/1000traces")
	b.ReportMetric((heap-heap0)/per/(1<<20), "MiB-heap/1000traces")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d traces waiting: rss %.0f → %.0f MiB, heap %.0f → %.0f MiB", b.N, rss0/(1<<20), rss/(1<<20), heap0/(1<<20), heap/(1<<20))
}

// metricAt sums a collector's own metric (with or without _total) over series whose labels
// contain match.
func metricAt(tb testing.TB, addr, name, match string) float64 {
	tb.Helper()
	code, body := collectortest.Get(tb, "http://"+addr+"/metrics")
	if code != 200 {
		tb.Fatalf("telemetry %s: %d", addr, code)
	}
	return sumMetric(string(body), name, match)
}

// sumMetric sums name's samples in a Prometheus text exposition whose labels contain match.
func sumMetric(text, name, match string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		rest = strings.TrimPrefix(rest, "_total")
		labels, value := "", rest
		if strings.HasPrefix(rest, "{") {
			labels, value, ok = strings.Cut(rest[1:], "}")
			if !ok {
				continue
			}
		} else if !strings.HasPrefix(rest, " ") {
			continue // another metric whose name starts with name
		}
		if !strings.Contains(labels, match) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(value, &v); err == nil {
			sum += v
		}
	}
	return sum
}
