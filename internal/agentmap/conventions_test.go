package agentmap_test

import (
	"testing"

	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// aRun is a run with every kind of span the mapper makes, the session id
// first (json mode) or learnt mid-run (RPC mode, from get_state).
func aRun(provider string) []event.Event {
	msg := &event.Message{Role: "assistant", Provider: provider, Model: "m", StopReason: "toolUse"}
	return []event.Event{
		{Type: event.TypeAgentStart}, {Type: event.TypeTurnStart},
		{Type: event.TypeMessageStart, Message: msg}, {Type: event.TypeMessageEnd, Message: msg},
		{Type: event.TypeToolExecutionStart, ToolCallID: "a", ToolName: "bash"},
		{Type: event.TypeToolExecutionEnd, ToolCallID: "a", ToolName: "bash"},
		{Type: event.TypeCompactionStart, Reason: "threshold"},
		{Type: event.TypeCompactionEnd, Reason: "threshold", Result: []byte(`{"tokensBefore":1}`), Compaction: &event.Compaction{TokensBefore: new(int64(1))}},
		{Type: event.TypeTurnEnd},
		{Type: event.TypeAutoRetryStart, Attempt: 1, MaxAttempts: 3},
		{Type: event.TypeAgentEnd},
		{Type: event.TypeAgentStart},
		{Type: event.TypeAutoRetryEnd, Success: new(true)},
		{Type: event.TypeAgentEnd},
		{Type: event.TypeAgentSettled},
	}
}

// TestConversationIDOnEverySpan: backends that group by session need
// gen_ai.conversation.id on each span, not only on the root.
func TestConversationIDOnEverySpan(t *testing.T) {
	header := []event.Event{{Type: event.TypeSession, ID: "sess-1"}}
	learnt := aRun("anthropic")
	// Learnt mid-run: after the tool started, before it ended.
	learnt = append(learnt[:5:5], append([]event.Event{{Type: event.TypeSession, ID: "sess-1"}}, learnt[5:]...)...)
	for name, evs := range map[string][]event.Event{
		"header first":   append(header, aRun("anthropic")...),
		"learnt mid-run": learnt,
	} {
		t.Run(name, func(t *testing.T) {
			spans, _ := recorded(t, evs)
			kinds := map[string]bool{}
			for _, s := range spans {
				kinds[s.Name()] = true
				v, ok := attrOf(s, semconv.GenAIConversationIDKey)
				if name == "learnt mid-run" && s.Name() == "chat m" {
					// It ended before the id was known: nothing can add it.
					if ok {
						t.Errorf("%s: gen_ai.conversation.id before it was known", s.Name())
					}
					continue
				}
				if !ok || v.AsString() != "sess-1" {
					t.Errorf("%s: gen_ai.conversation.id %q", s.Name(), v.String())
				}
			}
			for _, want := range []string{vocab.SpanRoot, vocab.SpanAgentRun, vocab.SpanTurn, "chat m",
				"execute_tool bash", vocab.SpanCompaction, vocab.SpanRetry} {
				if !kinds[want] {
					t.Errorf("no %s span to check", want)
				}
			}
		})
	}
}

// TestProviderWellKnownName: gen_ai.provider.name takes the conventions'
// value, and Pi's id stays in pi.provider, on chat, compaction and root.
func TestProviderWellKnownName(t *testing.T) {
	for pi, want := range map[string]string{"amazon-bedrock": "aws.bedrock", "google-vertex": "gcp.vertex_ai", "openrouter": "openrouter"} {
		spans, _ := recorded(t, aRun(pi))
		checked := 0
		for _, s := range spans {
			if s.Name() != "chat m" && s.Name() != vocab.SpanCompaction && s.Name() != vocab.SpanRoot {
				continue
			}
			checked++
			name, _ := attrOf(s, semconv.GenAIProviderNameKey)
			own, _ := attrOf(s, vocab.ProviderKey)
			if name.AsString() != want || own.AsString() != pi {
				t.Errorf("%s of %s: gen_ai.provider.name %q, pi.provider %q; want %q, %q", s.Name(), pi, name.String(), own.String(), want, pi)
			}
		}
		if checked != 3 {
			t.Errorf("%s: %d spans checked, want 3", pi, checked)
		}
	}
}
