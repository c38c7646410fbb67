package vocab

// Metric names, as OpenTelemetry names (docs/operations.md lists the
// Prometheus names the Collector turns them into). pi-otel derives the
// metrics from the spans (internal/telemetry/metrics); a mode records the
// GenAI metrics of its conventions, and the pi.* ones in both.

// GenAI client metrics of the v1.41 conventions (semconv v1.41 genaiconv),
// the default mode.
const (
	MetricTokenUsage        = "gen_ai.client.token.usage"
	MetricOperationDuration = "gen_ai.client.operation.duration"
	MetricTimeToFirstChunk  = "gen_ai.client.operation.time_to_first_chunk"
	MetricTimePerChunk      = "gen_ai.client.operation.time_per_output_chunk"
)

// GenAI metrics of the latest conventions (semantic-conventions-genai), in
// place of the v1.41 ones when they are opted in.
const (
	MetricInferenceDuration     = "gen_ai.client.inference.duration"
	MetricInferenceFirstChunk   = "gen_ai.client.inference.time_to_first_chunk"
	MetricInferencePerChunk     = "gen_ai.client.inference.time_per_output_chunk"
	MetricUsageInputTokens      = "gen_ai.client.inference.usage.input_tokens"
	MetricUsageOutputTokens     = "gen_ai.client.inference.usage.output_tokens"
	MetricUsageCacheReadTokens  = "gen_ai.client.inference.usage.cache_read.input_tokens"
	MetricUsageCacheWriteTokens = "gen_ai.client.inference.usage.cache_write.input_tokens"
	MetricUsageReasoningTokens  = "gen_ai.client.inference.usage.reasoning.output_tokens"
	MetricOperationInputTokens  = "gen_ai.client.inference.operation.input_tokens"
	MetricOperationOutputTokens = "gen_ai.client.inference.operation.output_tokens"
	MetricInvokeAgentDuration   = "gen_ai.invoke_agent.duration"
	MetricExecuteToolDuration   = "gen_ai.execute_tool.duration"
	MetricInvokeAgentInferences = "gen_ai.invoke_agent.inference_calls"
	MetricInvokeAgentToolCalls  = "gen_ai.invoke_agent.tool_calls"
)

// pi-otel's own metrics of runs, tools and commands, in both modes.
const (
	MetricRuns             = "pi.runs"
	MetricRunDuration      = "pi.run.duration"
	MetricTurns            = "pi.turns"
	MetricToolCalls        = "pi.tool.calls"
	MetricToolDuration     = "pi.tool.duration"
	MetricRetries          = "pi.retries"
	MetricCompactions      = "pi.compactions"
	MetricCost             = "pi.cost"
	MetricExtensionUIWait  = "pi.extension_ui.wait"
	MetricRPCCommands      = "pi.rpc.commands"
	MetricSubagentRuns     = "pi.subagent.runs"
	MetricSubagentDuration = "pi.subagent.duration"
)

// The health of pi-otel's own pipeline, in both modes.
const (
	MetricRecordsRead      = "pi_otel.records.read"
	MetricRecordsMalformed = "pi_otel.records.malformed"
	MetricRecordsRepaired  = "pi_otel.records.repaired"
	MetricSpansEnded       = "pi_otel.spans.ended"
	MetricSpansExported    = "pi_otel.spans.exported"
	MetricSpansDropped     = "pi_otel.spans.dropped"
	MetricExportFailures   = "pi_otel.export.failures"
	MetricSpoolCorrupt     = "pi_otel.spool.corrupt"
)

// Metrics returns every metric name pi-otel records in either mode, so that
// a dashboard check can tell a real metric from a misspelt one.
func Metrics() []string {
	return []string{
		MetricTokenUsage, MetricOperationDuration, MetricTimeToFirstChunk, MetricTimePerChunk,
		MetricInferenceDuration, MetricInferenceFirstChunk, MetricInferencePerChunk, MetricUsageInputTokens,
		MetricUsageOutputTokens, MetricUsageCacheReadTokens, MetricUsageCacheWriteTokens,
		MetricUsageReasoningTokens, MetricOperationInputTokens, MetricOperationOutputTokens,
		MetricInvokeAgentDuration, MetricExecuteToolDuration, MetricInvokeAgentInferences,
		MetricInvokeAgentToolCalls,
		MetricRuns, MetricRunDuration, MetricTurns, MetricToolCalls, MetricToolDuration, MetricRetries,
		MetricCompactions, MetricCost, MetricExtensionUIWait, MetricRPCCommands,
		MetricSubagentRuns, MetricSubagentDuration,
		MetricRecordsRead, MetricRecordsMalformed, MetricRecordsRepaired, MetricSpansEnded, MetricSpansExported,
		MetricSpansDropped, MetricExportFailures, MetricSpoolCorrupt,
	}
}
