package vocab

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// The GenAI conventions moved after v1.41 to their own repository
// (open-telemetry/semantic-conventions-genai; its
// docs/gen-ai/non-normative/migration.md lists every change), and the
// semconv releases after v1.41 have no GenAI names. pi-otel's spans and
// metrics use the v1.41 names unless OTEL_SEMCONV_STABILITY_OPT_IN holds
// gen_ai_latest_experimental; then what leaves the process uses the latest
// names only. The mapper always writes the v1.41 names; Latest rewrites a
// span's attributes on its way out, and the metrics pick their instruments
// by mode. docs/span-model.md has a column per mode.

// SchemaURL is the schema of the conventions pi-otel follows, v1.41, the
// last semconv release with the GenAI names: the resource, the tracers and
// the meters all declare it.
const SchemaURL = semconv.SchemaURL

// GenAI attribute keys pi-otel writes, in their v1.41 form, taken from
// semconv v1.41 itself.
const (
	GenAIOperationNameKey            = semconv.GenAIOperationNameKey
	GenAIProviderNameKey             = semconv.GenAIProviderNameKey
	GenAIAgentNameKey                = semconv.GenAIAgentNameKey
	GenAIConversationIDKey           = semconv.GenAIConversationIDKey
	GenAIRequestModelKey             = semconv.GenAIRequestModelKey
	GenAIResponseModelKey            = semconv.GenAIResponseModelKey
	GenAIResponseIDKey               = semconv.GenAIResponseIDKey
	GenAIResponseFinishReasonsKey    = semconv.GenAIResponseFinishReasonsKey
	GenAIResponseTimeToFirstChunkKey = semconv.GenAIResponseTimeToFirstChunkKey
	GenAIUsageInputTokensKey         = semconv.GenAIUsageInputTokensKey
	GenAIUsageOutputTokensKey        = semconv.GenAIUsageOutputTokensKey
	GenAIUsageReasoningTokensKey     = semconv.GenAIUsageReasoningOutputTokensKey
	GenAIUsageCacheReadKey           = semconv.GenAIUsageCacheReadInputTokensKey
	GenAIUsageCacheCreationKey       = semconv.GenAIUsageCacheCreationInputTokensKey // GenAIUsageCacheWriteKey in the latest
	GenAIToolNameKey                 = semconv.GenAIToolNameKey
	GenAIToolCallIDKey               = semconv.GenAIToolCallIDKey
	GenAIToolTypeKey                 = semconv.GenAIToolTypeKey
	GenAIToolDescriptionKey          = semconv.GenAIToolDescriptionKey
	GenAIInputMessagesKey            = semconv.GenAIInputMessagesKey  // with --capture-content
	GenAIOutputMessagesKey           = semconv.GenAIOutputMessagesKey // with --capture-content
	GenAISystemInstructionsKey       = semconv.GenAISystemInstructionsKey
	GenAIToolCallArgumentsKey        = semconv.GenAIToolCallArgumentsKey
	GenAIToolCallResultKey           = semconv.GenAIToolCallResultKey
	GenAIToolDefinitionsKey          = semconv.GenAIToolDefinitionsKey // with --capture-content
	GenAIRequestStreamKey            = semconv.GenAIRequestStreamKey
	ErrorTypeKey                     = semconv.ErrorTypeKey
	ServerAddressKey                 = semconv.ServerAddressKey // chat, where an RPC response named the endpoint
	ServerPortKey                    = semconv.ServerPortKey
)

// GenAI attribute keys that only the latest conventions have, or that
// v1.41 has no name for.
const (
	GenAIUsageCacheWriteKey       = attribute.Key("gen_ai.usage.cache_write.input_tokens") // latest
	GenAIReasoningLevelKey        = attribute.Key("gen_ai.request.reasoning.level")        // latest; pi.thinking_level in v1.41
	GenAIConversationCompactedKey = attribute.Key("gen_ai.conversation.compacted")         // both modes: v1.41 has no name for it
	GenAITokenModalityKey         = attribute.Key("gen_ai.token.modality")                 // latest, metrics only
	// The cost of one model call, as the genai repository's open pull
	// request 443 proposes it (not merged when pi-otel followed it): on
	// inference spans only, from pi.cost.total, in Pi's currency.
	GenAIUsageCostAmountKey   = attribute.Key("gen_ai.usage.cost.amount")   // latest
	GenAIUsageCostCurrencyKey = attribute.Key("gen_ai.usage.cost.currency") // latest
)

// CostCurrency is the currency of Pi's costs (Pi's prices are in US dollars).
const CostCurrency = "USD"

// Values of GenAI attributes.
const (
	TokenModalityUnknown = "unknown" // Pi reports token totals, not per modality
	OperationInvokeAgent = "invoke_agent"
	OperationChat        = "chat"
)

// GenAIKeys returns the GenAI attribute keys above, in both forms; Keys has
// the pi.* ones.
func GenAIKeys() []attribute.Key {
	return []attribute.Key{
		GenAIOperationNameKey, GenAIProviderNameKey, GenAIAgentNameKey, GenAIConversationIDKey,
		GenAIRequestModelKey, GenAIResponseModelKey, GenAIResponseIDKey, GenAIResponseFinishReasonsKey,
		GenAIResponseTimeToFirstChunkKey, GenAIUsageInputTokensKey, GenAIUsageOutputTokensKey,
		GenAIUsageReasoningTokensKey, GenAIUsageCacheReadKey, GenAIUsageCacheCreationKey,
		GenAIToolNameKey, GenAIToolCallIDKey, GenAIToolTypeKey, GenAIToolDescriptionKey,
		GenAIInputMessagesKey, GenAIOutputMessagesKey, GenAISystemInstructionsKey,
		GenAIToolCallArgumentsKey, GenAIToolCallResultKey, ErrorTypeKey, ServerAddressKey, ServerPortKey,
		GenAIUsageCacheWriteKey, GenAIReasoningLevelKey, GenAIConversationCompactedKey, GenAITokenModalityKey,
		GenAIRequestStreamKey, GenAIToolDefinitionsKey, GenAIUsageCostAmountKey, GenAIUsageCostCurrencyKey,
	}
}

// Latest rewrites one span's (or log record's) attributes, written with the
// v1.41 names, into the latest conventions: the cache write count takes
// its new name; a chat's thinking level becomes gen_ai.request.reasoning.level;
// and invoke_agent loses gen_ai.provider.name and the cache counts, which
// the latest agent span no longer has (pi.provider stays); a chat with a
// cost gets it as gen_ai.usage.cost.amount and .currency too. It returns
// attrs itself when nothing changes, and never modifies attrs.
func Latest(attrs []attribute.KeyValue) []attribute.KeyValue {
	var op string
	touched, cost := false, -1
	for i, kv := range attrs {
		switch kv.Key {
		case GenAIOperationNameKey:
			op = kv.Value.AsString()
		case GenAIUsageCacheCreationKey, ThinkingLevelKey:
			touched = true
		case CostTotalKey:
			cost = i
		}
	}
	agent, chat := op == OperationInvokeAgent, op == OperationChat && cost >= 0
	if !touched && !agent && !chat {
		return attrs
	}
	out := make([]attribute.KeyValue, 0, len(attrs)+2)
	for _, kv := range attrs {
		switch {
		case agent && (kv.Key == GenAIProviderNameKey || kv.Key == GenAIUsageCacheReadKey || kv.Key == GenAIUsageCacheCreationKey):
			continue
		case kv.Key == GenAIUsageCacheCreationKey:
			kv.Key = GenAIUsageCacheWriteKey
		case kv.Key == ThinkingLevelKey && op == OperationChat:
			kv.Key = GenAIReasoningLevelKey
		}
		out = append(out, kv)
	}
	if chat {
		out = append(out, GenAIUsageCostAmountKey.Float64(attrs[cost].Value.AsFloat64()),
			GenAIUsageCostCurrencyKey.String(CostCurrency))
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
