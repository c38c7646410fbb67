package agentmap_test

import (
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// TestAttributesWithANewConvention: real Pi 1.6.0 runs give the attributes
// the GenAI conventions named after v1.41, where Pi says them: the thinking
// level of each model call, the tool's declared description, and that the
// conversation was compacted, on the calls after the compaction only.
func TestAttributesWithANewConvention(t *testing.T) {
	chats := func(forest []*spantree.Node) []*spantree.Node {
		var out []*spantree.Node
		for _, n := range spantree.All(forest) {
			// A compaction's summary call is a chat too, of the conversation before it.
			if _, summary := n.Attr(string(vocab.CompactionSummaryCallKey)); strings.HasPrefix(n.Name, vocab.SpanChat.Prefix()) && !summary {
				out = append(out, n)
			}
		}
		return out
	}

	forest, _, _ := replay(t, replaytest.Capture(t, v160, "thinking"), nil)
	for _, c := range chats(forest) {
		if got := c.Str(string(vocab.ThinkingLevelKey)); got != "high" {
			t.Errorf("thinking: %s has pi.thinking_level %q, want high", c.Name, got)
		}
	}

	forest, _, _ = replay(t, replaytest.Capture(t, v160, "bash-tool"), nil)
	tools := spantree.Find(forest, "execute_tool bash")
	if len(tools) != 1 || !strings.HasPrefix(tools[0].Str("gen_ai.tool.description"), "Execute a bash command") {
		t.Errorf("bash-tool: execute_tool bash without its description: %v", tools)
	}
	for _, c := range chats(forest) {
		if c.Str(string(vocab.ThinkingLevelKey)) != "off" {
			t.Errorf("bash-tool: %s thinking level %q, want off", c.Name, c.Str(string(vocab.ThinkingLevelKey)))
		}
		if _, ok := c.Attr(string(vocab.GenAIConversationCompactedKey)); ok {
			t.Errorf("bash-tool: %s compacted with no compaction", c.Name)
		}
	}

	// threshold-compaction: two runs, each compacting after its model calls; the second run's
	// calls follow the first compaction.
	forest, _, _ = replay(t, replaytest.Capture(t, v160, "threshold-compaction"), nil)
	var flags []string
	for _, c := range chats(forest) {
		v, _ := c.Attr(string(vocab.GenAIConversationCompactedKey))
		flags = append(flags, v)
	}
	if got := strings.Join(flags, ","); got != ",true,true" {
		t.Errorf("threshold-compaction: gen_ai.conversation.compacted on the calls in order: %q, want \",true,true\"", got)
	}
}
