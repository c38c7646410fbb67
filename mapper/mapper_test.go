package mapper_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/mapper"
)

const v160 = "pi-1.6.0"

func one(t *testing.T, forest []*node) *node {
	t.Helper()
	if len(forest) != 1 {
		var names []string
		for _, n := range forest {
			names = append(names, n.shape())
		}
		t.Fatalf("want one trace, got %d:\n%s", len(forest), strings.Join(names, "\n"))
	}
	return forest[0]
}

func wantShape(t *testing.T, root *node, want string) {
	t.Helper()
	got := root.shape()
	want = strings.TrimLeft(want, "\n")
	if got != want {
		t.Fatalf("tree:\n%s\nwant:\n%s", got, want)
	}
}

func TestPlainText(t *testing.T) {
	forest, _, st := replay(t, capture(t, v160, "text"), nil)
	root := one(t, forest)
	wantShape(t, root, `
invoke_agent pi
  pi.agent_run
    pi.turn
      chat fake-model
`)
	if root.s.SpanKind() != trace.SpanKindInternal {
		t.Errorf("root kind %v", root.s.SpanKind())
	}
	for key, want := range map[string]string{
		"gen_ai.operation.name":      "invoke_agent",
		"gen_ai.agent.name":          "pi",
		"gen_ai.provider.name":       "fake",
		"gen_ai.request.model":       "fake-model",
		"gen_ai.usage.input_tokens":  "1357",
		"gen_ai.usage.output_tokens": "7",
		"pi.settled":                 "true",
		"pi.end_reason":              "settled",
		"pi.outcome":                 "ok",
		"pi.turns":                   "1",
		"pi.agent_runs":              "1",
		"pi.cost.total":              "0.004176",
	} {
		if got := root.str(t, key); got != want {
			t.Errorf("root %s = %q, want %q", key, got, want)
		}
	}
	if root.str(t, "gen_ai.conversation.id") == "" {
		t.Error("no conversation id")
	}
	chat := root.find("chat fake-model")[0]
	if chat.s.SpanKind() != trace.SpanKindClient {
		t.Errorf("chat kind %v", chat.s.SpanKind())
	}
	for key, want := range map[string]string{
		"gen_ai.response.id":             "chatcmpl-fake-0",
		"gen_ai.response.finish_reasons": `["stop"]`,
		"pi.duration_ms":                 "52",
	} {
		if got := chat.str(t, key); got != want {
			t.Errorf("chat %s = %q, want %q", key, got, want)
		}
	}
	if _, ok := chat.attr("gen_ai.response.time_to_first_chunk"); !ok {
		t.Error("no time to first chunk")
	}
	if st.Malformed != 0 {
		t.Errorf("malformed %d", st.Malformed)
	}
	// Privacy by default: the prompt is nowhere.
	assertNoText(t, root, "Say hello")
	assertNoText(t, root, "Hello from the fake model")
	assertNoText(t, root, "You are a coding assistant")
}

// assertNoText fails if s occurs in any attribute or event of the tree.
func assertNoText(t *testing.T, n *node, s string) {
	t.Helper()
	for _, kv := range n.s.Attributes() {
		if strings.Contains(kv.Value.Emit(), s) {
			t.Errorf("%s attribute %s leaks %q", n.name(), kv.Key, s)
		}
	}
	for _, e := range n.s.Events() {
		for _, kv := range e.Attributes {
			if strings.Contains(kv.Value.Emit(), s) {
				t.Errorf("%s event %s leaks %q", n.name(), e.Name, s)
			}
		}
	}
	if strings.Contains(n.s.Status().Description, s) {
		t.Errorf("%s status leaks %q", n.name(), s)
	}
	for _, c := range n.children {
		assertNoText(t, c, s)
	}
}

func TestBashTool(t *testing.T) {
	root := one(t, first(replay(t, capture(t, v160, "bash-tool"), nil)))
	wantShape(t, root, `
invoke_agent pi
  pi.agent_run
    pi.turn
      chat fake-model
      execute_tool bash
    pi.turn
      chat fake-model
`)
	tool := root.find("execute_tool bash")[0]
	for key, want := range map[string]string{
		"gen_ai.tool.name":    "bash",
		"gen_ai.tool.call.id": "call_bash_1",
		"gen_ai.tool.type":    "function",
		"pi.tool.duration_ms": "8",
	} {
		if got := tool.str(t, key); got != want {
			t.Errorf("tool %s = %q, want %q", key, got, want)
		}
	}
	if got := root.str(t, "pi.tool_calls"); got != "1" {
		t.Errorf("tool calls %s", got)
	}
	assertNoText(t, root, "hello from bash")
}

func first(f []*node, _ *mapper.Mapper, _ ingest.Stats) []*node { return f }

func TestParallelToolsWithFailures(t *testing.T) {
	root := one(t, first(replay(t, capture(t, v160, "parallel-tools"), nil)))
	turn := root.find("pi.turn")[0]
	status := map[string]codes.Code{}
	for _, c := range turn.children {
		if strings.HasPrefix(c.name(), "execute_tool") {
			status[c.str(t, "gen_ai.tool.call.id")] = c.s.Status().Code
		}
	}
	want := map[string]codes.Code{"call_ok_1": codes.Unset, "call_ok_2": codes.Unset, "call_missing": codes.Error, "call_exit3": codes.Error}
	if len(status) != len(want) {
		t.Fatalf("tools %v", status)
	}
	for id, c := range want {
		if status[id] != c {
			t.Errorf("%s status %v, want %v", id, status[id], c)
		}
	}
	if root.str(t, "pi.tool_errors") != "2" || root.str(t, "pi.tool_calls") != "4" {
		t.Errorf("counts: %s errors of %s", root.str(t, "pi.tool_errors"), root.str(t, "pi.tool_calls"))
	}
	if root.s.Status().Code == codes.Error {
		t.Error("tool errors alone must not fail the run")
	}
}

func TestRetryThenSuccess(t *testing.T) {
	root := one(t, first(replay(t, capture(t, v160, "retry-529"), nil)))
	wantShape(t, root, `
invoke_agent pi
  pi.agent_run !
    pi.turn !
      chat fake-model !
  pi.retry
  pi.agent_run
    pi.turn
      chat fake-model
`)
	retry := root.find("pi.retry")[0]
	if got := retry.str(t, "pi.retry.outcome"); got != "success" {
		t.Errorf("retry outcome %s", got)
	}
	if got := root.find("chat fake-model")[0].str(t, "error.type"); got != "529" {
		t.Errorf("error.type %s", got)
	}
	if root.s.Status().Code == codes.Error || root.str(t, "pi.outcome") != "ok" {
		t.Errorf("root %v %s", root.s.Status(), root.str(t, "pi.outcome"))
	}
	if root.str(t, "pi.retries") != "1" || root.str(t, "pi.agent_runs") != "2" {
		t.Error("counts")
	}
}

func TestRetriesExhausted(t *testing.T) {
	root := one(t, first(replay(t, capture(t, v160, "retry-exhausted"), nil)))
	if root.s.Status().Code != codes.Error || root.str(t, "pi.outcome") != "error" || root.str(t, "pi.end_reason") != "settled" {
		t.Errorf("root %v outcome %s", root.s.Status(), root.str(t, "pi.outcome"))
	}
	retries := root.find("pi.retry")
	if len(retries) != 2 {
		t.Fatalf("%d retry spans:\n%s", len(retries), root.shape())
	}
	if got := retries[0].str(t, "pi.retry.outcome"); got != "failed" {
		t.Errorf("first retry %s", got)
	}
	if got := retries[1].str(t, "pi.retry.outcome"); got != "exhausted" {
		t.Errorf("last retry %s", got)
	}
	if len(root.find("pi.agent_run")) != 3 {
		t.Errorf("runs:\n%s", root.shape())
	}
}

func TestConnectionCutIsRetried(t *testing.T) {
	root := one(t, first(replay(t, capture(t, v160, "cut"), nil)))
	if got := root.find("chat fake-model")[0].str(t, "error.type"); got != "terminated" {
		t.Errorf("error.type %s", got)
	}
	if root.str(t, "pi.outcome") != "ok" {
		t.Error("cut then retried ok should end ok")
	}
}

func TestTwoPromptsMakeTwoTraces(t *testing.T) {
	forest, _, _ := replay(t, capture(t, v160, "two-prompts"), nil)
	if len(forest) != 2 {
		t.Fatalf("%d traces", len(forest))
	}
	a, b := forest[0], forest[1]
	if a.s.SpanContext().TraceID() == b.s.SpanContext().TraceID() {
		t.Error("same trace")
	}
	if a.str(t, "gen_ai.conversation.id") != b.str(t, "gen_ai.conversation.id") {
		t.Error("conversation ids differ")
	}
}

func TestSignalEndsOpenSpans(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  mapper.Ending
	}{
		{"sigterm-mid-tool", mapper.Ending{Reason: mapper.EndSignal, ExitCode: 143, Signal: "SIGTERM"}},
		{"sigint-mid-tool", mapper.Ending{Reason: mapper.EndSignal, ExitCode: 130, Signal: "SIGINT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := one(t, first(replay(t, capture(t, v160, tc.name), &tc.end)))
			if root.s.Status().Code != codes.Error {
				t.Error("unsettled root not in error")
			}
			for key, want := range map[string]string{"pi.end_reason": "signal", "pi.outcome": "unsettled", "pi.settled": "false", "pi.signal": tc.end.Signal} {
				if got := root.str(t, key); got != want {
					t.Errorf("%s = %s, want %s", key, got, want)
				}
			}
			tool := root.find("execute_tool bash")
			if len(tool) != 1 || tool[0].str(t, "pi.unfinished") != "true" {
				t.Errorf("open tool not closed as unfinished:\n%s", root.shape())
			}
		})
	}
}

func TestTruncatedStreamClosesAtEOF(t *testing.T) {
	b := capture(t, v160, "bash-tool")
	cut := strings.Index(string(b), `"tool_execution_end"`)
	root := one(t, first(replay(t, b[:cut], nil)))
	if root.str(t, "pi.end_reason") != "eof" || root.s.Status().Code != codes.Error {
		t.Errorf("end %s status %v", root.str(t, "pi.end_reason"), root.s.Status())
	}
}

func TestBigOutputAndLineSeparators(t *testing.T) {
	forest, _, st := replay(t, capture(t, v160, "big-output"), nil)
	root := one(t, forest)
	if st.Malformed != 0 {
		t.Errorf("%d malformed", st.Malformed)
	}
	if len(root.find("execute_tool bash")) != 1 || root.str(t, "pi.outcome") != "ok" {
		t.Errorf("tree:\n%s", root.shape())
	}
}

func TestThinkingUsage(t *testing.T) {
	root := one(t, first(replay(t, capture(t, v160, "thinking"), nil)))
	chat := root.find("chat fake-model")[0]
	if got := chat.str(t, "gen_ai.usage.reasoning.output_tokens"); got == "0" {
		t.Errorf("reasoning tokens %s", got)
	}
	if got := chat.str(t, "gen_ai.usage.cache_read.input_tokens"); got == "0" {
		t.Errorf("cache read %s", got)
	}
}

func TestThresholdCompactionAfterAgentEndAndBetweenTurns(t *testing.T) {
	forest, _, _ := replay(t, capture(t, v160, "threshold-compaction"), nil)
	if len(forest) != 2 {
		t.Fatalf("%d traces", len(forest))
	}
	// First prompt: compaction after agent_end, before agent_settled.
	wantShape(t, forest[0], `
invoke_agent pi
  pi.agent_run
    pi.turn
      chat fake-model
  pi.compaction
`)
	// Second: compaction between two turns, inside the run.
	wantShape(t, forest[1], `
invoke_agent pi
  pi.agent_run
    pi.turn
      chat fake-model
      execute_tool bash
    pi.compaction
    pi.turn
      chat fake-model
`)
	c := forest[0].find("pi.compaction")[0]
	for key, want := range map[string]string{"pi.compaction.reason": "threshold", "pi.compaction.tokens_before": "7200", "pi.compaction.estimated_tokens_after": "1579", "pi.compaction.outcome": "ok"} {
		if got := c.str(t, key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	if forest[0].str(t, "pi.compactions") != "1" {
		t.Error("compaction not counted")
	}
	assertNoText(t, forest[0], "firstKeptEntryId")
}

func TestOverflowRecoveryStaysInOneTrace(t *testing.T) {
	forest, _, _ := replay(t, capture(t, v160, "overflow"), nil)
	if len(forest) != 2 {
		t.Fatalf("%d traces", len(forest))
	}
	root := forest[1]
	wantShape(t, root, `
invoke_agent pi
  pi.agent_run !
    pi.turn !
      chat fake-model !
  pi.compaction
  pi.agent_run
    pi.turn
      chat fake-model
`)
	if got := root.find("pi.compaction")[0].str(t, "pi.compaction.reason"); got != "overflow" {
		t.Errorf("reason %s", got)
	}
	if got := root.find("chat fake-model")[0].str(t, "error.type"); got != "context_overflow" {
		t.Errorf("error.type %s", got)
	}
	if root.str(t, "pi.outcome") != "ok" {
		t.Errorf("outcome %s", root.str(t, "pi.outcome"))
	}
}

func TestOlderPi(t *testing.T) {
	for _, version := range []string{"pi-1.0.3", "pi-0.73.x"} {
		t.Run(version, func(t *testing.T) {
			for _, name := range []string{"text", "bash-tool", "retry-529"} {
				exit := &mapper.Ending{Reason: mapper.EndExit}
				root := one(t, first(replay(t, capture(t, version, name), exit)))
				if len(root.find("pi.agent_run")) == 0 || len(root.find("chat fake-model")) == 0 {
					t.Errorf("%s: tree\n%s", name, root.shape())
				}
				if root.s.Status().Code == codes.Error {
					t.Errorf("%s: an old but finished run is not an error: %v", name, root.s.Status())
				}
				wantEnd := "settled"
				if version == "pi-0.73.x" {
					wantEnd = "agent_end"
				}
				if got := root.str(t, "pi.end_reason"); got != wantEnd {
					t.Errorf("%s: end_reason %s, want %s", name, got, wantEnd)
				}
				if name == "retry-529" && len(root.find("pi.retry")) != 1 {
					t.Errorf("retry not in the same trace:\n%s", root.shape())
				}
			}
		})
	}
}

func TestInexactTimesLeaveOutTimeToFirstChunk(t *testing.T) {
	root := one(t, first(replay(t, capture(t, v160, "text"), nil, mapper.WithInexactTimes())))
	if _, ok := root.find("chat fake-model")[0].attr("gen_ai.response.time_to_first_chunk"); ok {
		t.Fatal("a replay reported a time to first chunk it cannot know")
	}
}

func TestCompactionNamesTheRunsModel(t *testing.T) {
	forest, _, _ := replay(t, capture(t, v160, "threshold-compaction"), nil)
	c := forest[0].find("pi.compaction")[0]
	if c.str(t, "gen_ai.request.model") != "fake-model" || c.str(t, "gen_ai.provider.name") != "fake" {
		t.Fatal("compaction without its model")
	}
	if c.str(t, "pi.cost.total") == "0" {
		t.Fatal("compaction cost missing")
	}
}
