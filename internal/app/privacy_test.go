package app

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

type secret struct{ context, value string }

func secretCorpus(t *testing.T) []secret {
	t.Helper()
	f, err := os.Open(repo.Path("internal/content/redact/testdata/secrets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []secret
	s := bufio.NewScanner(f)
	for s.Scan() {
		ctx, val, ok := strings.Cut(s.Text(), "\t")
		if !ok {
			t.Fatalf("corpus line without a tab: %q", s.Text())
		}
		out = append(out, secret{ctx, val})
	}
	if len(out) < 50 {
		t.Fatalf("only %d secrets in the corpus", len(out))
	}
	return out
}

// secretStream is a Pi 1.6.0-shaped run whose system prompt, tool
// definitions, prompt, tool arguments, tool output (also sent back to the
// model) and answers all carry the corpus, next to a harmless marker.
func secretStream(t *testing.T, corpus []secret) []byte {
	var text []string
	for _, s := range corpus {
		text = append(text, s.context)
	}
	all := "VISIBLE-MARKER " + strings.Join(text, "\n")
	rec := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	usage := map[string]any{"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": map[string]any{"total": 0.001}}
	lines := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-11-29T10:00:00.000Z","cwd":"/w"}`,
		`{"type":"agent_start"}`,
		`{"type":"turn_start"}`,
		rec(map[string]any{"type": "message_end", "message": map[string]any{"role": "system", "content": "", "sections": map[string]any{"preamble": all}, "timestamp": 1795990000000,
			// A description is declared, not content (gen_ai.tool.description goes out
			// without capture, redacted as names are): no marker in it.
			"toolsAdded": []any{map[string]any{"name": "bash", "description": strings.Join(text, "\n"), "parameters": map[string]any{"type": "object"}}}}}),
		rec(map[string]any{"type": "message_end", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": all}}, "timestamp": 1795990000001}}),
		rec(map[string]any{"type": "message_start", "message": map[string]any{"role": "assistant", "content": []any{}, "provider": "p", "model": "m", "stopReason": "pending", "timestamp": 1795990000002}}),
		rec(map[string]any{"type": "message_update", "usage": usage, "assistantMessageEvent": map[string]any{"type": "text_delta", "contentIndex": 0, "delta": all}}),
		rec(map[string]any{"type": "message_end", "message": map[string]any{"role": "assistant", "provider": "p", "model": "m", "stopReason": "toolUse", "usage": usage, "timestamp": 1795990000002,
			"content": []any{map[string]any{"type": "text", "text": all}, map[string]any{"type": "toolCall", "id": "c1", "name": "bash", "arguments": map[string]any{"command": all}}}}}),
		rec(map[string]any{"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": map[string]any{"command": all}}),
		rec(map[string]any{"type": "tool_execution_update", "toolCallId": "c1", "toolName": "bash", "args": map[string]any{"command": all}, "partialResult": map[string]any{"content": []any{map[string]any{"type": "text", "text": all}}}}),
		rec(map[string]any{"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash", "isError": true, "durationMs": 5, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": all}}}}),
		// The tool's result goes back to the model: the next call's input.
		rec(map[string]any{"type": "message_end", "message": map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "isError": true, "timestamp": 1795990000003,
			"content": []any{map[string]any{"type": "text", "text": all}}}}),
		`{"type":"turn_end"}`,
		`{"type":"turn_start"}`,
		rec(map[string]any{"type": "message_start", "message": map[string]any{"role": "assistant", "content": []any{}, "provider": "p", "model": "m", "stopReason": "pending", "timestamp": 1795990000004}}),
		rec(map[string]any{"type": "message_end", "message": map[string]any{"role": "assistant", "provider": "p", "model": "m", "stopReason": "stop", "usage": usage, "timestamp": 1795990000004,
			"content": []any{map[string]any{"type": "text", "text": all}}}}),
		rec(map[string]any{"type": "queue_update", "steering": []any{all}, "followUp": []any{}}),
		rec(map[string]any{"type": "session_info_changed", "name": all}),
		`{"type":"turn_end"}`,
		`{"type":"agent_end","willRetry":false}`,
		`{"type":"agent_settled","aborted":false}`,
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

func replayToFile(t *testing.T, stream []byte, flags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "spans.jsonl")
	stderr := replayOK(t, append(append([]string{"--traces-exporter", "file", "--traces-file", out}, flags...), streamFile(t, stream))...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + stderr
}

func TestNoContentByDefault(t *testing.T) {
	corpus := secretCorpus(t)
	got := replayToFile(t, secretStream(t, corpus))
	if strings.Contains(got, "VISIBLE-MARKER") {
		t.Fatal("content reached telemetry without --capture-content")
	}
	if !strings.Contains(got, `"execute_tool bash"`) {
		t.Fatal("no spans exported at all: the test would prove nothing")
	}
}

func TestCapturedContentIsRedacted(t *testing.T) {
	corpus := secretCorpus(t)
	got := replayToFile(t, secretStream(t, corpus), "--capture-content", "--max-content-length", "1000000")
	if !strings.Contains(got, "VISIBLE-MARKER") {
		t.Fatal("--capture-content captured nothing: the test would prove nothing")
	}
	for _, key := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.tool.definitions"} {
		if !strings.Contains(got, key) {
			t.Errorf("%s not captured", key)
		}
	}
	for _, s := range corpus {
		if strings.Contains(got, s.value) {
			t.Errorf("secret survived: %q (from %q)", s.value, s.context)
		}
	}
}

func TestCapturedContentIsTruncated(t *testing.T) {
	corpus := secretCorpus(t)
	got := replayToFile(t, secretStream(t, corpus), "--capture-content", "--max-content-length", "64")
	if !strings.Contains(got, "truncated") {
		t.Fatal("no truncation marker with a 64-byte limit")
	}
}
