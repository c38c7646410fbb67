package vocab

import (
	"go.opentelemetry.io/otel/attribute"
)

// LatestSchemaURL is the schema the latest GenAI conventions declare: the
// genai repository's model/manifest.yaml, which has no release yet, only
// this development schema. Spans, metrics and log records of the latest
// mode declare it (docs/span-model.md, Conventions per mode).
const LatestSchemaURL = "https://opentelemetry.io/schemas/gen-ai-dev/1.42.0-dev"

// Attribute keys of captured content's bounds (docs/span-model.md,
// Content).
const (
	// ContentOmittedMessagesKey counts the oldest messages left out of a
	// span's gen_ai.input.messages to keep it within its bound.
	ContentOmittedMessagesKey = attribute.Key("pi.content.omitted_messages")
	// ContentOverBudgetKey marks a chat span whose content was left out
	// because its run had spent its content budget.
	ContentOverBudgetKey = attribute.Key("pi.content.over_budget")
	// ContentBytesKey is, on the root, the bytes of content attributes the
	// run's chat spans and root carry.
	ContentBytesKey = attribute.Key("pi.content.bytes")
	// CompactionSummaryCallKey marks the chat span of a compaction's
	// summary call.
	CompactionSummaryCallKey = attribute.Key("pi.compaction.summary_call")
)
