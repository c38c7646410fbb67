package agentmap_test

import (
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

const v160 = "pi-1.6.0"

func TestPlainText(t *testing.T) {
	forest, _, st := replay(t, replaytest.Capture(t, v160, "text"), nil)
	root := spantree.One(t, forest)
	if root.Kind != "internal" {
		t.Errorf("root kind %v", root.Kind)
	}
	root.WantAttrs(t, map[string]string{
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
	})
	if root.Must(t, "gen_ai.conversation.id") == "" {
		t.Error("no conversation id")
	}
	chat := root.Find("chat fake-model")[0]
	if chat.Kind != "client" {
		t.Errorf("chat kind %v", chat.Kind)
	}
	chat.WantAttrs(t, map[string]string{
		"gen_ai.response.id":             "chatcmpl-fake-0",
		"gen_ai.response.finish_reasons": `["stop"]`,
		"pi.duration_ms":                 "52",
	})
	if _, ok := chat.Attr("gen_ai.response.time_to_first_chunk"); !ok {
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

// assertNoText fails if s occurs in any attribute, event or status of the tree.
func assertNoText(t *testing.T, n *spantree.Node, s string) {
	t.Helper()
	for _, where := range spantree.Leaks([]*spantree.Node{n}, s) {
		t.Errorf("%s leaks %q", where, s)
	}
}

func TestBashTool(t *testing.T) {
	root := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, "bash-tool"), nil)))
	tool := root.Find("execute_tool bash")[0]
	tool.WantAttrs(t, map[string]string{
		"gen_ai.tool.name":    "bash",
		"gen_ai.tool.call.id": "call_bash_1",
		"gen_ai.tool.type":    "function",
		"pi.tool.duration_ms": "8",
	})
	if got := root.Must(t, "pi.tool_calls"); got != "1" {
		t.Errorf("tool calls %s", got)
	}
	assertNoText(t, root, "hello from bash")
}

func first(f []*spantree.Node, _ *agentmap.Mapper, _ ingest.Stats) []*spantree.Node { return f }

func TestParallelToolsWithFailures(t *testing.T) {
	root := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, "parallel-tools"), nil)))
	turn := root.Find("pi.turn")[0]
	status := map[string]string{}
	for _, c := range turn.Children {
		if strings.HasPrefix(c.Name, "execute_tool") {
			status[c.Must(t, "gen_ai.tool.call.id")] = c.Status.Code
		}
	}
	want := map[string]string{"call_ok_1": "unset", "call_ok_2": "unset", "call_missing": "error", "call_exit3": "error"}
	if len(status) != len(want) {
		t.Fatalf("tools %v", status)
	}
	for id, c := range want {
		if status[id] != c {
			t.Errorf("%s status %v, want %v", id, status[id], c)
		}
	}
	if root.Must(t, "pi.tool_errors") != "2" || root.Must(t, "pi.tool_calls") != "4" {
		t.Errorf("counts: %s errors of %s", root.Must(t, "pi.tool_errors"), root.Must(t, "pi.tool_calls"))
	}
	if root.Failed() {
		t.Error("tool errors alone must not fail the run")
	}
}

func TestRetryThenSuccess(t *testing.T) {
	root := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, "retry-529"), nil)))
	retry := root.Find("pi.retry")[0]
	if got := retry.Must(t, "pi.retry.outcome"); got != "success" {
		t.Errorf("retry outcome %s", got)
	}
	if got := root.Find("chat fake-model")[0].Must(t, "error.type"); got != "529" {
		t.Errorf("error.type %s", got)
	}
	if root.Failed() || root.Must(t, "pi.outcome") != "ok" {
		t.Errorf("root %v %s", root.Status, root.Must(t, "pi.outcome"))
	}
	if root.Must(t, "pi.retries") != "1" || root.Must(t, "pi.agent_runs") != "2" {
		t.Error("counts")
	}
}

func TestRetriesExhausted(t *testing.T) {
	root := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, "retry-exhausted"), nil)))
	if !root.Failed() || root.Must(t, "pi.outcome") != "error" || root.Must(t, "pi.end_reason") != "settled" {
		t.Errorf("root %v outcome %s", root.Status, root.Must(t, "pi.outcome"))
	}
	retries := root.Find("pi.retry")
	if len(retries) != 2 {
		t.Fatalf("%d retry spans:\n%s", len(retries), root.String())
	}
	if got := retries[0].Must(t, "pi.retry.outcome"); got != "failed" {
		t.Errorf("first retry %s", got)
	}
	if got := retries[1].Must(t, "pi.retry.outcome"); got != "exhausted" {
		t.Errorf("last retry %s", got)
	}
	if len(root.Find("pi.agent_run")) != 3 {
		t.Errorf("runs:\n%s", root.String())
	}
}

func TestConnectionCutIsRetried(t *testing.T) {
	root := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, "cut"), nil)))
	if got := root.Find("chat fake-model")[0].Must(t, "error.type"); got != "terminated" {
		t.Errorf("error.type %s", got)
	}
	if root.Must(t, "pi.outcome") != "ok" {
		t.Error("cut then retried ok should end ok")
	}
}

func TestTwoPromptsMakeTwoTraces(t *testing.T) {
	forest, _, _ := replay(t, replaytest.Capture(t, v160, "two-prompts"), nil)
	if len(forest) != 2 {
		t.Fatalf("%d traces", len(forest))
	}
	a, b := forest[0], forest[1]
	if a.TraceID == b.TraceID {
		t.Error("same trace")
	}
	if a.Must(t, "gen_ai.conversation.id") != b.Must(t, "gen_ai.conversation.id") {
		t.Error("conversation ids differ")
	}
}

func TestSignalEndsOpenSpans(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  agentmap.Ending
	}{
		{"sigterm-mid-tool", agentmap.Ending{Reason: vocab.EndSignal, ExitCode: 143, Signal: "SIGTERM"}},
		{"sigint-mid-tool", agentmap.Ending{Reason: vocab.EndSignal, ExitCode: 130, Signal: "SIGINT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, tc.name), &tc.end)))
			if !root.Failed() {
				t.Error("unsettled root not in error")
			}
			root.WantAttrs(t, map[string]string{"pi.end_reason": "signal", "pi.outcome": "unsettled", "pi.settled": "false", "pi.signal": tc.end.Signal})
			tool := root.Find("execute_tool bash")
			if len(tool) != 1 || tool[0].Must(t, "pi.unfinished") != "true" {
				t.Errorf("open tool not closed as unfinished:\n%s", root.String())
			}
		})
	}
}

func TestTruncatedStreamClosesAtEOF(t *testing.T) {
	b := replaytest.Capture(t, v160, "bash-tool")
	cut := strings.Index(string(b), `"tool_execution_end"`)
	root := spantree.One(t, first(replay(t, b[:cut], nil)))
	if root.Must(t, "pi.end_reason") != "eof" || !root.Failed() {
		t.Errorf("end %s status %v", root.Must(t, "pi.end_reason"), root.Status)
	}
}

func TestBigOutputAndLineSeparators(t *testing.T) {
	forest, _, st := replay(t, replaytest.Capture(t, v160, "big-output"), nil)
	root := spantree.One(t, forest)
	if st.Malformed != 0 {
		t.Errorf("%d malformed", st.Malformed)
	}
	if len(root.Find("execute_tool bash")) != 1 || root.Must(t, "pi.outcome") != "ok" {
		t.Errorf("tree:\n%s", root.String())
	}
}

func TestThinkingUsage(t *testing.T) {
	root := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, "thinking"), nil)))
	chat := root.Find("chat fake-model")[0]
	if got := chat.Must(t, "gen_ai.usage.reasoning.output_tokens"); got == "0" {
		t.Errorf("reasoning tokens %s", got)
	}
	if got := chat.Must(t, "gen_ai.usage.cache_read.input_tokens"); got == "0" {
		t.Errorf("cache read %s", got)
	}
}

func TestThresholdCompactionAfterAgentEndAndBetweenTurns(t *testing.T) {
	forest, _, _ := replay(t, replaytest.Capture(t, v160, "threshold-compaction"), nil)
	if len(forest) != 2 {
		t.Fatalf("%d traces", len(forest))
	}
	// The golden tree holds the places: the first prompt compacts after
	// agent_end, before agent_settled; the second between two turns.
	c := forest[0].Find("pi.compaction")[0]
	c.WantAttrs(t, map[string]string{"pi.compaction.reason": "threshold", "pi.compaction.tokens_before": "7200", "pi.compaction.estimated_tokens_after": "1579", "pi.compaction.outcome": "ok"})
	if forest[0].Must(t, "pi.compactions") != "1" {
		t.Error("compaction not counted")
	}
	assertNoText(t, forest[0], "firstKeptEntryId")
}

func TestOverflowRecoveryStaysInOneTrace(t *testing.T) {
	forest, _, _ := replay(t, replaytest.Capture(t, v160, "overflow"), nil)
	if len(forest) != 2 {
		t.Fatalf("%d traces", len(forest))
	}
	root := forest[1]
	if got := root.Find("pi.compaction")[0].Must(t, "pi.compaction.reason"); got != "overflow" {
		t.Errorf("reason %s", got)
	}
	if got := root.Find("chat fake-model")[0].Must(t, "error.type"); got != "context_overflow" {
		t.Errorf("error.type %s", got)
	}
	if root.Must(t, "pi.outcome") != "ok" {
		t.Errorf("outcome %s", root.Must(t, "pi.outcome"))
	}
}

func TestOlderPi(t *testing.T) {
	for _, version := range []string{"pi-1.0.3", "pi-0.73.x"} {
		t.Run(version, func(t *testing.T) {
			for _, name := range []string{"text", "bash-tool", "retry-529"} {
				exit := &agentmap.Ending{Reason: vocab.EndExit}
				root := spantree.One(t, first(replay(t, replaytest.Capture(t, version, name), exit)))
				if len(root.Find("pi.agent_run")) == 0 || len(root.Find("chat fake-model")) == 0 {
					t.Errorf("%s: tree\n%s", name, root.String())
				}
				if root.Failed() {
					t.Errorf("%s: an old but finished run is not an error: %v", name, root.Status)
				}
				wantEnd := "settled"
				if version == "pi-0.73.x" {
					wantEnd = "agent_end"
				}
				if got := root.Must(t, "pi.end_reason"); got != wantEnd {
					t.Errorf("%s: end_reason %s, want %s", name, got, wantEnd)
				}
				if name == "retry-529" && len(root.Find("pi.retry")) != 1 {
					t.Errorf("retry not in the same trace:\n%s", root.String())
				}
			}
		})
	}
}

func TestInexactTimesLeaveOutTimeToFirstChunk(t *testing.T) {
	root := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, "text"), nil, agentmap.WithInexactTimes())))
	if _, ok := root.Find("chat fake-model")[0].Attr("gen_ai.response.time_to_first_chunk"); ok {
		t.Fatal("a replay reported a time to first chunk it cannot know")
	}
}

func TestCompactionNamesTheRunsModel(t *testing.T) {
	forest, _, _ := replay(t, replaytest.Capture(t, v160, "threshold-compaction"), nil)
	c := forest[0].Find("pi.compaction")[0]
	if c.Must(t, "gen_ai.request.model") != "fake-model" || c.Must(t, "gen_ai.provider.name") != "fake" {
		t.Fatal("compaction without its model")
	}
	// The summary is a model call of its own, below the compaction, with
	// the call's tokens and cost.
	calls := c.Find("chat fake-model")
	if len(calls) != 1 || calls[0].Must(t, "pi.compaction.summary_call") != "true" {
		t.Fatalf("compaction without its summary call:\n%s", c.String())
	}
	s := calls[0]
	if s.Must(t, "pi.cost.total") == "0" || s.Must(t, "gen_ai.usage.output_tokens") == "0" || s.Must(t, "gen_ai.request.model") != "fake-model" {
		t.Fatal("summary call without its cost, tokens or model")
	}
	if _, ok := c.Attr("pi.cost.total"); ok {
		t.Error("the cost is on the compaction span too: counted twice")
	}
}
