package piconv

import "go.opentelemetry.io/otel/attribute"

// The GenAI conventions moved after v1.41 to their own repository
// (open-telemetry/semantic-conventions-genai; its
// docs/gen-ai/non-normative/migration.md lists every change). pi-otel's
// spans and metrics use the v1.41 names unless OTEL_SEMCONV_STABILITY_OPT_IN
// holds gen_ai_latest_experimental; then what leaves the process uses the
// latest names only. The mapper always writes the v1.41 names; Latest
// rewrites a span's attributes on its way out, and the metrics pick their
// instruments by mode. docs/span-model.md has a column per mode.

// GenAI attribute keys and values the modes treat differently, or that
// only the latest conventions have.
const (
	ProviderNameKey          = attribute.Key("gen_ai.provider.name")
	OperationNameKey         = attribute.Key("gen_ai.operation.name")
	UsageCacheReadKey        = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	UsageCacheCreationKey    = attribute.Key("gen_ai.usage.cache_creation.input_tokens") // v1.41
	UsageCacheWriteKey       = attribute.Key("gen_ai.usage.cache_write.input_tokens")    // latest
	ReasoningLevelKey        = attribute.Key("gen_ai.request.reasoning.level")           // latest; pi.thinking_level in v1.41
	ConversationCompactedKey = attribute.Key("gen_ai.conversation.compacted")            // both modes: v1.41 has no name for it
	TokenModalityKey         = attribute.Key("gen_ai.token.modality")                    // latest, metrics only

	TokenModalityUnknown = "unknown" // Pi reports token totals, not per modality
	OperationInvokeAgent = "invoke_agent"
	OperationChat        = "chat"
)

// GenAIKeys returns the GenAI attribute keys above; Keys has the pi.* ones.
func GenAIKeys() []attribute.Key {
	return []attribute.Key{
		ProviderNameKey, OperationNameKey, UsageCacheReadKey, UsageCacheCreationKey, UsageCacheWriteKey,
		ReasoningLevelKey, ConversationCompactedKey, TokenModalityKey,
	}
}

// Metric names of the latest conventions (the v1.41 ones are in
// internal/telemetry/metrics).
const (
	MetricInferenceDuration     = "gen_ai.client.inference.duration"
	MetricInferenceFirstChunk   = "gen_ai.client.inference.time_to_first_chunk"
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

// Latest rewrites one span's (or log record's) attributes, written with the
// v1.41 names, into the latest conventions: the cache write count takes
// its new name; a chat's thinking level becomes gen_ai.request.reasoning.level;
// and invoke_agent loses gen_ai.provider.name and the cache counts, which
// the latest agent span no longer has (pi.provider stays). It returns attrs
// itself when nothing changes, and never modifies attrs.
func Latest(attrs []attribute.KeyValue) []attribute.KeyValue {
	var op string
	touched := false
	for _, kv := range attrs {
		switch kv.Key {
		case OperationNameKey:
			op = kv.Value.AsString()
		case UsageCacheCreationKey, ThinkingLevelKey:
			touched = true
		}
	}
	agent := op == OperationInvokeAgent
	if !touched && !agent {
		return attrs
	}
	out := make([]attribute.KeyValue, 0, len(attrs))
	for _, kv := range attrs {
		switch {
		case agent && (kv.Key == ProviderNameKey || kv.Key == UsageCacheReadKey || kv.Key == UsageCacheCreationKey):
			continue
		case kv.Key == UsageCacheCreationKey:
			kv.Key = UsageCacheWriteKey
		case kv.Key == ThinkingLevelKey && op == OperationChat:
			kv.Key = ReasoningLevelKey
		}
		out = append(out, kv)
	}
	if len(out) == len(attrs) && !changed(out, attrs) {
		return attrs
	}
	return out
}

// changed reports whether a rewrite differs from the original.
func changed(a, b []attribute.KeyValue) bool {
	for i := range a {
		if a[i].Key != b[i].Key {
			return true
		}
	}
	return false
}
