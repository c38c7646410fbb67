package metrics_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// latestRun ends the spans of a small run: two model calls (one failed,
// with no usage), a tool that fails, and the root.
func latestRun(h *harness) {
	chat := func(status codes.Code, kvs ...attribute.KeyValue) {
		base := []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.provider.name", "anthropic"),
			attribute.String("gen_ai.request.model", "claude-x"),
			vocab.CostTotalKey.Float64(0.5),
		}
		h.span("chat claude-x", 2*time.Second, status, append(base, kvs...)...)
	}
	chat(codes.Unset,
		attribute.Int64("gen_ai.usage.input_tokens", 1200),
		attribute.Int64("gen_ai.usage.output_tokens", 300),
		attribute.Int64("gen_ai.usage.cache_read.input_tokens", 1000),
		attribute.Int64("gen_ai.usage.cache_creation.input_tokens", 150),
		attribute.Int64("gen_ai.usage.reasoning.output_tokens", 40),
		attribute.Float64("gen_ai.response.time_to_first_chunk", 0.4))
	chat(codes.Error, attribute.String("error.type", "overloaded"))
	h.span("execute_tool bash", 1500*time.Millisecond, codes.Error,
		attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", "bash"),
		attribute.String("gen_ai.tool.type", "function"), attribute.String("error.type", "tool_error"))
	h.span(vocab.SpanRoot, 6*time.Second, codes.Error,
		attribute.String("gen_ai.operation.name", "invoke_agent"), vocab.OutcomeKey.String("error"),
		vocab.TurnsKey.Int(2), vocab.ToolCallsKey.Int(1))
}

// TestLatestMetrics: with the latest conventions opted in, a run records
// the gen_ai.client.inference.*, gen_ai.invoke_agent.* and
// gen_ai.execute_tool.duration instruments, none of the v1.41 GenAI ones,
// and the pi.* ones as before.
func TestLatestMetrics(t *testing.T) {
	h := newHarness(t, metrics.WithGenAILatest())
	latestRun(h)
	c := h.collect()

	for _, old := range []string{vocab.MetricTokenUsage, vocab.MetricOperationDuration, vocab.MetricTimeToFirstChunk} {
		if _, ok := c[old]; ok {
			t.Errorf("%s recorded with the latest conventions", old)
		}
	}
	chat := "gen_ai.operation.name=chat,gen_ai.provider.name=anthropic,gen_ai.request.model=claude-x"
	tokens := "gen_ai.agent.name=pi," + chat
	usage := tokens + ",gen_ai.token.modality=unknown"
	wantEqual(t, "inference.duration", c.histograms(t, vocab.MetricInferenceDuration), map[string]histo{
		chat:                            {1, 2},
		"error.type=overloaded," + chat: {1, 2},
	})
	wantEqual(t, "time_to_first_chunk", c.histograms(t, vocab.MetricInferenceFirstChunk), map[string]histo{chat: {1, 0.4}})
	// The failed call counts 0 tokens, as the conventions ask.
	wantEqual(t, "usage.input", c.sums(t, vocab.MetricUsageInputTokens), map[string]float64{usage: 1200})
	wantEqual(t, "usage.output", c.sums(t, vocab.MetricUsageOutputTokens), map[string]float64{usage: 300})
	wantEqual(t, "usage.cache_read", c.sums(t, vocab.MetricUsageCacheReadTokens), map[string]float64{usage: 1000})
	wantEqual(t, "usage.cache_write", c.sums(t, vocab.MetricUsageCacheWriteTokens), map[string]float64{usage: 150})
	wantEqual(t, "usage.reasoning", c.sums(t, vocab.MetricUsageReasoningTokens), map[string]float64{usage: 40})
	wantEqual(t, "operation.input", c.histograms(t, vocab.MetricOperationInputTokens), map[string]histo{tokens: {1, 1200}})
	wantEqual(t, "operation.output", c.histograms(t, vocab.MetricOperationOutputTokens), map[string]histo{tokens: {1, 300}})
	wantEqual(t, "invoke_agent.duration", c.histograms(t, vocab.MetricInvokeAgentDuration), map[string]histo{
		"error.type=error,gen_ai.agent.name=pi": {1, 6},
	})
	wantEqual(t, "inference_calls", c.histograms(t, vocab.MetricInvokeAgentInferences), map[string]histo{"gen_ai.agent.name=pi": {1, 2}})
	wantEqual(t, "tool_calls", c.histograms(t, vocab.MetricInvokeAgentToolCalls), map[string]histo{"gen_ai.agent.name=pi": {1, 1}})
	wantEqual(t, "execute_tool.duration", c.histograms(t, vocab.MetricExecuteToolDuration), map[string]histo{
		"error.type=tool_error,gen_ai.agent.name=pi,gen_ai.tool.name=bash,gen_ai.tool.type=function": {1, 1.5},
	})
	// Both modes keep pi.*.
	wantEqual(t, "pi.runs", c.sums(t, vocab.MetricRuns), map[string]float64{"pi.outcome=error": 1})
	cost := c.sums(t, vocab.MetricCost)
	if v := cost["gen_ai.agent.name=pi,gen_ai.provider.name=anthropic,gen_ai.request.model=claude-x"]; !near(v, 1) {
		t.Errorf("pi.cost = %v", cost)
	}
}

// TestDefaultRecordsNoLatestMetric: without the opt-in, none of the latest
// instruments appear.
func TestDefaultRecordsNoLatestMetric(t *testing.T) {
	h := newHarness(t)
	latestRun(h)
	c := h.collect()
	for _, name := range []string{vocab.MetricInferenceDuration, vocab.MetricUsageInputTokens, vocab.MetricInvokeAgentDuration, vocab.MetricExecuteToolDuration} {
		if _, ok := c[name]; ok {
			t.Errorf("%s recorded without the opt-in", name)
		}
	}
	if _, ok := c[vocab.MetricTokenUsage]; !ok {
		t.Errorf("no %s by default", vocab.MetricTokenUsage)
	}
}

// With the latest conventions a nested agent run records the agent metrics under its own
// gen_ai.agent.name: its duration (error.type when it failed), model calls and tool calls.
func TestLatestSubagentMetrics(t *testing.T) {
	h := newHarness(t, metrics.WithGenAILatest())
	invoke := attribute.String("gen_ai.operation.name", "invoke_agent")
	h.span("invoke_agent scout", 3*time.Second, codes.Unset, invoke, attribute.String("gen_ai.agent.name", "scout"),
		vocab.NestedDepthKey.Int(1), vocab.TurnsKey.Int(2), vocab.ToolCallsKey.Int(1))
	h.span("invoke_agent scout", time.Second, codes.Error, invoke, attribute.String("gen_ai.agent.name", "scout"),
		vocab.NestedDepthKey.Int(1), vocab.TurnsKey.Int(1), vocab.ToolCallsKey.Int(0), attribute.String("error.type", "400"))
	c := h.collect()
	wantEqual(t, "invoke_agent.duration", c.histograms(t, vocab.MetricInvokeAgentDuration), map[string]histo{
		"gen_ai.agent.name=scout":                {1, 3},
		"error.type=400,gen_ai.agent.name=scout": {1, 1},
	})
	wantEqual(t, "inference_calls", c.histograms(t, vocab.MetricInvokeAgentInferences), map[string]histo{"gen_ai.agent.name=scout": {2, 3}})
	wantEqual(t, "tool_calls", c.histograms(t, vocab.MetricInvokeAgentToolCalls), map[string]histo{"gen_ai.agent.name=scout": {2, 1}})
}
