package agentmap_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/content/render"
	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// capture is content capture as `--capture-content` sets it up, at the
// default per-value limit.
func capture(t testing.TB) agentmap.Option {
	t.Helper()
	c, err := render.New(nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return agentmap.WithContent(c)
}

// contentKeys are the attributes the content trees show.
var contentKeys = []string{
	string(vocab.GenAISystemInstructionsKey), string(vocab.GenAIInputMessagesKey),
	string(vocab.GenAIOutputMessagesKey), string(vocab.GenAIToolDefinitionsKey),
	string(vocab.ContentOmittedMessagesKey), string(vocab.ContentOverBudgetKey),
	string(vocab.CompactionSummaryCallKey), string(vocab.ErrorTypeKey),
}

// TestContentTrees replays real captures with content on and holds the
// content attributes of every span to NAME.content.tree (-update rewrites
// them): which span carries the prompt, the tool results, the answer, the
// system instructions, and the run's input and output.
func TestContentTrees(t *testing.T) {
	for _, name := range []string{"bash-tool", "two-prompts", "parallel-tools", "threshold-compaction", "retry-exhausted"} {
		t.Run(name, func(t *testing.T) {
			forest, _, _ := replay(t, replaytest.Capture(t, v160, name), nil, capture(t))
			spantree.GoldenKeys(t, repo.Captures(v160, name+".content.tree"), forest, contentKeys...)
		})
	}
}

// messages decodes a gen_ai.*.messages value into role: text lines, one
// per part, for assertions that say what a span shows.
func messages(t *testing.T, n *spantree.Node, key string) []string {
	t.Helper()
	v, ok := n.Attr(key)
	if !ok {
		t.Fatalf("%s: no %s", n.Name, key)
	}
	var msgs []struct {
		Role  string `json:"role"`
		Parts []struct {
			Type     string `json:"type"`
			Content  string `json:"content"`
			Name     string `json:"name"`
			Response string `json:"response"`
		} `json:"parts"`
	}
	if err := json.Unmarshal([]byte(v), &msgs); err != nil {
		t.Fatalf("%s: %s is no message list: %v", n.Name, key, err)
	}
	var out []string
	for _, m := range msgs {
		for _, p := range m.Parts {
			out = append(out, m.Role+": "+p.Type+" "+p.Content+p.Name+p.Response)
		}
	}
	return out
}

func TestContentOnTheRightSpans(t *testing.T) {
	forest, _, _ := replay(t, replaytest.Capture(t, v160, "bash-tool"), nil, capture(t))
	root := spantree.One(t, forest)
	chats := root.Find("chat fake-model")
	if len(chats) != 2 {
		t.Fatalf("want 2 chats:\n%s", root)
	}
	want := [][]string{
		{"user: text Run echo"},
		{"user: text Run echo", "assistant: tool_call bash", "tool: tool_call_response hello from bash\n"},
	}
	for i, c := range chats {
		if got := messages(t, c, "gen_ai.input.messages"); strings.Join(got, "|") != strings.Join(want[i], "|") {
			t.Errorf("chat %d sent %q, want %q", i, got, want[i])
		}
		if si := c.Str("gen_ai.system_instructions"); !strings.Contains(si, "coding assistant") {
			t.Errorf("chat %d without the system instructions: %.80q", i, si)
		}
	}
	if got := messages(t, chats[1], "gen_ai.output.messages"); len(got) != 1 || got[0] != "assistant: text The command printed hello." {
		t.Errorf("last chat answered %q", got)
	}
	// The root: the prompt and the final answer, and the tools the agent had.
	if got := messages(t, root, "gen_ai.input.messages"); strings.Join(got, "|") != "user: text Run echo" {
		t.Errorf("root input %q", got)
	}
	if got := messages(t, root, "gen_ai.output.messages"); strings.Join(got, "|") != "assistant: text The command printed hello." {
		t.Errorf("root output %q", got)
	}
	if defs := root.Str("gen_ai.tool.definitions"); !strings.Contains(defs, `"name":"bash"`) || !strings.Contains(defs, `"type":"function"`) {
		t.Errorf("root tool definitions %.200q", defs)
	}
	// One place per fact: the system prompt is on the chats, not on an event.
	for _, e := range root.EventsNamed(vocab.EventSystemMessage) {
		if _, ok := e.Attrs["gen_ai.system_instructions"]; ok {
			t.Error("the system instructions are on the pi.system_message event too")
		}
	}
	if n, _ := root.Attr("pi.content.bytes"); n == "" || n == "0" {
		t.Errorf("root without its content size: %q", n)
	}
}

// The second run's call is sent the first run's conversation too; its root
// shows its own prompt only.
func TestContentAcrossRuns(t *testing.T) {
	forest, _, _ := replay(t, replaytest.Capture(t, v160, "two-prompts"), nil, capture(t))
	if len(forest) != 2 {
		t.Fatalf("want 2 runs, got %d", len(forest))
	}
	second := forest[1]
	chat := second.Find("chat fake-model")[0]
	want := "user: text First prompt|assistant: text First answer.|user: text Second prompt"
	if got := strings.Join(messages(t, chat, "gen_ai.input.messages"), "|"); got != want {
		t.Errorf("second call sent %q, want %q", got, want)
	}
	if !strings.Contains(chat.Str("gen_ai.system_instructions"), "coding assistant") {
		t.Error("the second run's call lost the system instructions")
	}
	if got := strings.Join(messages(t, second, "gen_ai.input.messages"), "|"); got != "user: text Second prompt" {
		t.Errorf("second root input %q", got)
	}
}

// toolSession is a Pi 1.6.0-shaped run: a system prompt declaring a tool,
// a prompt, calls model calls each running a tool whose result is result
// bytes long, then an answer.
func toolSession(t testing.TB, calls, result int, secret string) []byte {
	rec := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	usage := map[string]any{"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": map[string]any{"total": 0.001}}
	assistant := func(stop string, content ...any) map[string]any {
		return map[string]any{"role": "assistant", "provider": "p", "model": "m", "stopReason": stop, "usage": usage, "content": content}
	}
	lines := []string{
		`{"type":"session","version":3,"id":"s1","timestamp":"2026-11-29T10:00:00.000Z","cwd":"/w"}`,
		`{"type":"agent_start"}`,
		`{"type":"turn_start"}`,
		rec(map[string]any{"type": "message_end", "message": map[string]any{"role": "system", "content": "",
			"sections":   map[string]any{"preamble": "You help. " + secret},
			"toolsAdded": []any{map[string]any{"name": "bash", "description": "Run a command. " + secret, "parameters": map[string]any{"type": "object"}}}}}),
		rec(map[string]any{"type": "message_end", "message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "THE-PROMPT " + secret}}}}),
	}
	for i := range calls {
		id := "c" + strconv.Itoa(i)
		call := assistant("toolUse", map[string]any{"type": "toolCall", "id": id, "name": "bash", "arguments": map[string]any{"command": "run " + id}})
		out := map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("RESULT-%d %s %s", i, secret, strings.Repeat("x", result))}}}
		lines = append(lines,
			rec(map[string]any{"type": "message_start", "message": assistant("pending")}),
			rec(map[string]any{"type": "message_end", "message": call}),
			rec(map[string]any{"type": "tool_execution_start", "toolCallId": id, "toolName": "bash", "args": map[string]any{"command": "run " + id}}),
			rec(map[string]any{"type": "tool_execution_end", "toolCallId": id, "toolName": "bash", "isError": false, "result": out}),
			rec(map[string]any{"type": "message_end", "message": map[string]any{"role": "toolResult", "toolCallId": id, "toolName": "bash", "content": out["content"]}}),
			`{"type":"turn_end"}`, `{"type":"turn_start"}`,
		)
	}
	lines = append(lines,
		rec(map[string]any{"type": "message_start", "message": assistant("pending")}),
		rec(map[string]any{"type": "message_end", "message": assistant("stop", map[string]any{"type": "text", "text": "THE-ANSWER " + secret})}),
		`{"type":"turn_end"}`, `{"type":"agent_end","willRetry":false}`, `{"type":"agent_settled","aborted":false}`,
	)
	return []byte(strings.Join(lines, "\n") + "\n")
}

// Truncation keeps the newest messages: the last call still shows the
// tool result it answers, and says how many older messages it left out.
func TestContentTruncationKeepsTheNewest(t *testing.T) {
	forest, _, _ := replay(t, toolSession(t, 30, 3000, ""), nil, capture(t))
	root := spantree.One(t, forest)
	chats := root.Find("chat m")
	last := chats[len(chats)-1]
	in := last.Str("gen_ai.input.messages")
	if len(in) > 64<<10 {
		t.Errorf("last call's input is %d bytes, over the 64 KiB bound", len(in))
	}
	if !strings.Contains(in, "RESULT-29 ") || strings.Contains(in, "RESULT-0 ") || strings.Contains(in, "THE-PROMPT") {
		t.Errorf("the last call's input does not keep the newest messages only: starts %.100q, ends %.100q", in, in[max(0, len(in)-100):])
	}
	omitted, _ := strconv.Atoi(last.Str("pi.content.omitted_messages"))
	if sent := len(messages(t, last, "gen_ai.input.messages")); omitted == 0 || omitted+sent != 1+2*30 {
		t.Errorf("omitted %d + sent %d, want the 61 messages of the run", omitted, sent)
	}
	// The first call, with little history, shows the prompt whole.
	if got := messages(t, chats[0], "gen_ai.input.messages"); len(got) != 1 || !strings.HasPrefix(got[0], "user: text THE-PROMPT") {
		t.Errorf("first call sent %q", got)
	}
	if _, ok := chats[0].Attr("pi.content.omitted_messages"); ok {
		t.Error("the first call says it left something out")
	}
}

// TestContentBounds: a 500-call session with content on stays within the
// documented bounds (docs/span-model.md, Content): 64 KiB of input
// messages on a span, 2 MiB of inputs and 512 KiB of answers on a run's
// chat spans; the root says how much its run carries.
func TestContentBounds(t *testing.T) {
	forest, _, _ := replay(t, toolSession(t, 500, 2000, ""), nil, capture(t))
	root := spantree.One(t, forest)
	chats := root.Find("chat m")
	if len(chats) != 501 {
		t.Fatalf("%d chats, want 501", len(chats))
	}
	keys := []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
	chatBytes, maxInput, over := 0, 0, 0
	size := func(n *spantree.Node, k string) int { v, _ := n.Attr(k); return len(v) }
	for _, c := range chats {
		for _, k := range keys {
			chatBytes += size(c, k)
		}
		maxInput = max(maxInput, size(c, "gen_ai.input.messages"))
		if c.Str("pi.content.over_budget") == "true" {
			over++
		}
	}
	rootBytes := 0
	for _, k := range []string{"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions"} {
		rootBytes += size(root, k)
	}
	t.Logf("500 calls: chat content %d bytes (largest input %d), root %d bytes, %d calls over budget", chatBytes, maxInput, rootBytes, over)
	if maxInput > 64<<10 {
		t.Errorf("a span's input messages are %d bytes, over 64 KiB", maxInput)
	}
	if chatBytes > 2<<20+512<<10 {
		t.Errorf("the run's chat content is %d bytes, over 2.5 MiB", chatBytes)
	}
	// Answers have a budget of their own: the last call still shows its own.
	if !strings.Contains(chats[len(chats)-1].Str("gen_ai.output.messages"), "THE-ANSWER") {
		t.Error("the last call lost its answer to the budget")
	}
	if over == 0 {
		t.Error("no call over budget: the test does not reach the run's bound")
	}
	if got := root.Str("pi.content.bytes"); got != strconv.Itoa(chatBytes+rootBytes) {
		t.Errorf("pi.content.bytes %s, measured %d", got, chatBytes+rootBytes)
	}
	// The answer is kept whatever the budget: the root shows it.
	if !strings.Contains(root.Str("gen_ai.output.messages"), "THE-ANSWER") {
		t.Error("the root lost the run's answer")
	}
}

// TestContentRedacted: secrets in the prompt, the tool results, the system
// prompt and the tool definitions are redacted on every new attribute, and
// without capture nothing of them appears at all.
func TestContentRedacted(t *testing.T) {
	const secret = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
	stream := toolSession(t, 2, 10, secret)
	forest, _, _ := replay(t, stream, nil, capture(t))
	text := spantree.Render(forest, append(contentKeys, "gen_ai.tool.call.arguments", "gen_ai.tool.call.result")...)
	for _, want := range []string{"THE-PROMPT", "RESULT-1", "THE-ANSWER", "You help.", "Run a command."} {
		if !strings.Contains(text, want) {
			t.Errorf("%q not captured: the test would prove nothing", want)
		}
	}
	if strings.Contains(text, secret) {
		t.Errorf("a secret survived capture:\n%s", text)
	}

	// Without capture no content at all. (The tool's declared description
	// is a name, not content: it stays, and the export redacts it, as
	// internal/app's privacy tests show.)
	forest, _, _ = replay(t, stream, nil)
	for _, n := range spantree.All(forest) {
		for k, v := range n.Attrs {
			if strings.Contains(v, "THE-") || strings.Contains(v, "RESULT-") || strings.Contains(v, "You help.") {
				t.Errorf("%s: %s carries content without capture", n.Name, k)
			}
		}
		for _, e := range n.Events {
			for k, v := range e.Attrs {
				if strings.Contains(v, "THE-") || strings.Contains(v, "You help.") {
					t.Errorf("%s event %s: %s carries content without capture", n.Name, e.Name, k)
				}
			}
		}
	}
}
