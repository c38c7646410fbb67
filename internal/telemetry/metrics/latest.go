package metrics

import (
	"cmp"
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// latestInstruments are the latest GenAI conventions' metrics
// (semantic-conventions-genai, docs/gen-ai/client-inference.md,
// gen-ai-token-metrics.md and gen-ai-metrics.md). Pi reports usage as
// totals, not per modality, so the usage counters carry
// gen_ai.token.modality=unknown, as the conventions ask.
type latestInstruments struct {
	duration, firstChunk, perChunk       metric.Float64Histogram
	input, output, cacheRead, cacheWrite metric.Int64Counter
	reasoning                            metric.Int64Counter
	opInput, opOutput                    metric.Int64Histogram
	agentDuration, toolDuration          metric.Float64Histogram
	inferenceCalls, toolCalls            metric.Int64Histogram
}

func newLatestInstruments(in *instruments) *latestInstruments {
	var l latestInstruments
	seconds := func(name, desc string, buckets []float64) metric.Float64Histogram {
		return in.float64Histogram(name, "s", desc, buckets)
	}
	counter := func(name, desc string) metric.Int64Counter { return in.int64Counter(name, "{token}", desc) }
	l.duration = seconds(vocab.MetricInferenceDuration, "GenAI inference operation duration.", genAIBuckets)
	l.firstChunk = seconds(vocab.MetricInferenceFirstChunk, "Time to receive the first chunk of a streaming response.", genAIBuckets)
	l.perChunk = seconds(vocab.MetricInferencePerChunk, "Time from one output chunk of a streaming response to the next.", genAIBuckets)
	l.input = counter(vocab.MetricUsageInputTokens, "The number of input (prompt) tokens used, including cached tokens.")
	l.output = counter(vocab.MetricUsageOutputTokens, "The number of output (completion) tokens used, including reasoning tokens.")
	l.cacheRead = counter(vocab.MetricUsageCacheReadTokens, "The number of input tokens served from a provider-managed cache.")
	l.cacheWrite = counter(vocab.MetricUsageCacheWriteTokens, "The number of input tokens written to a provider-managed cache.")
	l.reasoning = counter(vocab.MetricUsageReasoningTokens, "The number of output tokens used for reasoning.")
	l.opInput = in.int64Histogram(vocab.MetricOperationInputTokens, "{token}", "Input tokens per inference operation.", tokenBuckets)
	l.opOutput = in.int64Histogram(vocab.MetricOperationOutputTokens, "{token}", "Output tokens per inference operation.", tokenBuckets)
	l.agentDuration = seconds(vocab.MetricInvokeAgentDuration, "The end-to-end duration of a single agent invocation.", agentBuckets)
	l.toolDuration = seconds(vocab.MetricExecuteToolDuration, "The duration of a single tool execution.", genAIBuckets)
	l.inferenceCalls = in.int64Histogram(vocab.MetricInvokeAgentInferences, "{inference_call}", "Model calls per agent invocation.", callBuckets)
	l.toolCalls = in.int64Histogram(vocab.MetricInvokeAgentToolCalls, "{tool_call}", "Tool calls per agent invocation.", callBuckets)
	return &l
}

var agentName = vocab.GenAIAgentNameKey.String(vocab.AgentName)

func (l *latestInstruments) onChat(ctx context.Context, span sdktrace.ReadOnlySpan, a attrs, provider genaiconv.ProviderNameAttr, model attribute.KeyValue) {
	base := []attribute.KeyValue{keyOperation.String(string(genaiconv.OperationNameChat)), keyProvider.String(string(provider)), model}
	withError := base
	if span.Status().Code == codes.Error {
		withError = append(base[:len(base):len(base)], keyErrorType.String(cmp.Or(token(a.str(keyErrorType)), unknownLabel)))
	}
	l.duration.Record(ctx, chatDuration(span, a), metric.WithAttributes(withError...))
	if v, ok := a.float(keyTTFC); ok && v >= 0 {
		l.firstChunk.Record(ctx, v, metric.WithAttributes(base...))
	}

	// Tokens, as cost, by agent: a dashboard splits the parent from its
	// subagents.
	tokens := append(base[:len(base):len(base)], spend(a)...)
	usage := metric.WithAttributes(append(tokens[:len(tokens):len(tokens)], vocab.GenAITokenModalityKey.String(vocab.TokenModalityUnknown))...)
	// Every call counts, a failed one with 0, as the conventions ask.
	in, _ := a.int(keyInputTokens)
	out, _ := a.int(keyOutputTokens)
	l.input.Add(ctx, max(in, 0), usage)
	l.output.Add(ctx, max(out, 0), usage)
	for _, c := range []struct {
		key attribute.Key
		to  metric.Int64Counter
	}{
		{vocab.GenAIUsageCacheReadKey, l.cacheRead},
		{vocab.GenAIUsageCacheCreationKey, l.cacheWrite},
		{vocab.GenAIUsageReasoningTokensKey, l.reasoning},
	} {
		if v, ok := a.int(c.key); ok && v >= 0 {
			c.to.Add(ctx, v, usage)
		}
	}
	if _, ok := a.int(keyInputTokens); ok {
		l.opInput.Record(ctx, max(in, 0), metric.WithAttributes(tokens...))
	}
	if _, ok := a.int(keyOutputTokens); ok {
		l.opOutput.Record(ctx, max(out, 0), metric.WithAttributes(tokens...))
	}
}

// onAgent records an agent invocation, Pi's run or a nested agent's under
// its own name (agent): its duration, and its model and tool calls.
// failure is its error.type when it failed without one.
func (l *latestInstruments) onAgent(ctx context.Context, span sdktrace.ReadOnlySpan, a attrs, agent attribute.KeyValue, failure string) {
	set := []attribute.KeyValue{agent}
	if span.Status().Code == codes.Error {
		// The run's class of failure: its own error.type if it has one, else failure.
		set = append(set, keyErrorType.String(cmp.Or(token(a.str(keyErrorType)), failure)))
	}
	l.agentDuration.Record(ctx, seconds(span), metric.WithAttributes(set...))
	// A turn is one assistant message, so one model call; summary calls of compactions are not
	// counted.
	if v, ok := a.int(vocab.TurnsKey); ok && v >= 0 {
		l.inferenceCalls.Record(ctx, v, metric.WithAttributes(agent))
	}
	if v, ok := a.int(vocab.ToolCallsKey); ok && v >= 0 {
		l.toolCalls.Record(ctx, v, metric.WithAttributes(agent))
	}
}

func (l *latestInstruments) onTool(ctx context.Context, a attrs, d float64, failed bool) {
	set := []attribute.KeyValue{
		keyToolName.String(cmp.Or(token(a.str(keyToolName)), unknownLabel)),
		vocab.GenAIToolTypeKey.String(cmp.Or(token(a.str(vocab.GenAIToolTypeKey)), vocab.ToolTypeFunction)),
		agentOf(a),
	}
	if failed {
		set = append(set, keyErrorType.String(cmp.Or(token(a.str(keyErrorType)), vocab.ToolErrorType)))
	}
	l.toolDuration.Record(ctx, d, metric.WithAttributes(set...))
}
