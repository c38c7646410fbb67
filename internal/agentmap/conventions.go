package agentmap

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Bounds on what the mapper keeps of the tool declarations: a session
// declares a handful of tools, a stream is input pi-otel does not control.
const (
	maxToolDescriptions   = 256
	maxToolDescriptionLen = 1024
)

// conventionState is what the GenAI attributes that came after v1.41
// need from earlier records of the session (docs/span-model.md, Conventions
// per mode): the declared tools' descriptions and whether a compaction has
// replaced the conversation.
type conventionState struct {
	descriptions map[string]string // tool name → description
	tools        []string          // the declared tools' names, in order (gen_ai.tool.definitions)
	compacted    bool
	// provider and model of the last call: a compaction with no run open
	// (RPC compact while idle) summarises with them.
	provider, model string
}

// learnTools remembers the tools a system message declares, and their
// descriptions: `tools` lists them all, `toolsAdded` adds to the list
// (the decoder read both into ToolDefs).
func (s *conventionState) learnTools(msg *event.Message) {
	if msg.Tools != nil {
		s.tools = s.tools[:0]
	}
	for _, t := range msg.ToolDefs {
		if !slices.Contains(s.tools, t.Name) && len(s.tools) < maxToolDescriptions {
			s.tools = append(s.tools, t.Name)
		}
		if t.Description == "" {
			continue
		}
		if s.descriptions == nil {
			s.descriptions = map[string]string{}
		}
		if _, known := s.descriptions[t.Name]; !known && len(s.descriptions) >= maxToolDescriptions {
			continue
		}
		s.descriptions[t.Name] = vocab.Clip(t.Description, maxToolDescriptionLen)
	}
}

// toolAttrs adds gen_ai.tool.description when the tool was declared.
// It names the agent that called the tool too (Pi), as the latest
// execute_tool span asks; a nested run's tools name their own agent.
func (s *conventionState) toolAttrs(name string, attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, semconv.GenAIAgentName(vocab.AgentName))
	if d, ok := s.descriptions[name]; ok {
		attrs = append(attrs, semconv.GenAIToolDescription(d))
	}
	return attrs
}

// called notes the model a finished call used.
func (s *conventionState) called(msg *event.Message) {
	if msg.Model != "" {
		s.provider, s.model = msg.Provider, msg.Model
	}
}

// chatAttrs adds the thinking level the call was made with (pi.thinking_level;
// gen_ai.request.reasoning.level in the latest conventions) and, after a
// compaction, gen_ai.conversation.compacted.
func (s *conventionState) chatAttrs(msg *event.Message, attrs []attribute.KeyValue) []attribute.KeyValue {
	if msg.ThinkingLevel != "" {
		attrs = append(attrs, vocab.ThinkingLevelKey.String(msg.ThinkingLevel))
	}
	if s.compacted {
		attrs = append(attrs, vocab.GenAIConversationCompactedKey.Bool(true))
	}
	return attrs
}
