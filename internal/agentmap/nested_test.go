package agentmap_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/content/redact"
	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// subagentEnd is the subagent tool_execution_end record of a capture.
type subagentEnd struct {
	IsError bool `json:"isError"`
	Result  struct {
		Details struct {
			Results []struct {
				Agent    string                 `json:"agent"`
				Usage    struct{ Cost float64 } `json:"usage"`
				Messages []struct {
					Role       string   `json:"role"`
					Timestamp  int64    `json:"timestamp"`
					DurationMs *float64 `json:"durationMs"`
					StopReason string   `json:"stopReason"`
				} `json:"messages"`
			} `json:"results"`
		} `json:"details"`
	} `json:"result"`
}

// captureFacts reads from a capture what the trace must show: the
// subagent result, and the parent's own model cost.
func captureFacts(t *testing.T, stream []byte) (end subagentEnd, parentCost float64, lastChat int64) {
	t.Helper()
	for _, line := range bytes.Split(stream, []byte("\n")) {
		var rec struct {
			Type     string `json:"type"`
			ToolName string `json:"toolName"`
			Message  struct {
				Role      string `json:"role"`
				Timestamp int64  `json:"timestamp"`
				Usage     struct {
					Cost struct{ Total float64 } `json:"cost"`
				} `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		switch {
		case rec.Type == "message_end" && rec.Message.Role == "assistant":
			parentCost += rec.Message.Usage.Cost.Total
			lastChat = rec.Message.Timestamp
		case rec.Type == "tool_execution_end" && rec.ToolName == "subagent":
			if err := json.Unmarshal(line, &end); err != nil {
				t.Fatal(err)
			}
		}
	}
	return end, parentCost, lastChat
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// TestSubagentCaptures replays the real subagent runs and checks what the
// golden trees do not show: each nested run's agent, cost and status, its
// chat spans timed by the child's messages, and totals counted once.
func TestSubagentCaptures(t *testing.T) {
	for _, name := range []string{"subagent-single", "subagent-parallel", "subagent-chain", "subagent-fail"} {
		t.Run(name, func(t *testing.T) {
			stream := replaytest.Capture(t, v160, name)
			forest, m, _ := replay(t, stream, nil)
			end, parentCost, lastChat := captureFacts(t, stream)
			root := spantree.One(t, forest)
			tool := spantree.Find(forest, "execute_tool subagent")
			if len(tool) != 1 {
				t.Fatalf("%d subagent tool spans", len(tool))
			}
			results := end.Result.Details.Results
			runs := tool[0].Find("invoke_agent scout")
			if len(runs) != len(results) {
				t.Fatalf("%d nested runs, want %d", len(runs), len(results))
			}
			nestedCost := 0.0
			for _, res := range results {
				nestedCost += res.Usage.Cost
				// The run whose first model call starts at this result's.
				var first int64
				for _, msg := range res.Messages {
					if msg.Role == "assistant" {
						first = msg.Timestamp
						break
					}
				}
				var run *spantree.Node
				for _, r := range runs {
					for _, c := range r.Children {
						if c.Kind == "client" && c.Start.UnixMilli() == first {
							run = r
						}
					}
				}
				if run == nil {
					t.Fatalf("no nested chat span starts at the child's message timestamp %d", first)
				}
				cost, _ := strconv.ParseFloat(run.Must(t, "pi.cost.total"), 64)
				if !near(cost, res.Usage.Cost) {
					t.Errorf("nested pi.cost.total %v, want the child's %v", cost, res.Usage.Cost)
				}
				if run.Must(t, "gen_ai.agent.name") != res.Agent || run.Must(t, "pi.nested.depth") != "1" {
					t.Errorf("agent %q depth %q", run.Str("gen_ai.agent.name"), run.Str("pi.nested.depth"))
				}
				chats := 0
				for _, c := range run.Children {
					if c.Kind == "client" {
						msg := res.Messages[0]
						for _, mm := range res.Messages {
							if mm.Role == "assistant" && mm.Timestamp == c.Start.UnixMilli() {
								msg = mm
							}
						}
						if msg.DurationMs != nil && c.End.Sub(c.Start) != time.Duration(*msg.DurationMs*float64(time.Millisecond)) {
							t.Errorf("chat lasts %v, want durationMs %v", c.End.Sub(c.Start), *msg.DurationMs)
						}
						chats++
					}
				}
				if want := countRole(res.Messages, "assistant"); chats != want {
					t.Errorf("%d chat spans, want %d", chats, want)
				}
				if run.Failed() != (name == "subagent-fail") {
					t.Errorf("nested run failed=%v", run.Failed())
				}
			}
			// Every span lies within its parent, the nested ones too.
			for _, n := range spantree.All(forest) {
				if p := n.Parent; p != nil && (n.Start.Before(p.Start) || n.End.After(p.End)) {
					t.Errorf("%s [%v, %v] outside its parent %s [%v, %v]", n.Name, n.Start, n.End, p.Name, p.Start, p.End)
				}
			}
			// The root's total is the parent's own model calls plus the
			// children's, once; the nested part is visible on its own.
			total, _ := strconv.ParseFloat(root.Must(t, "pi.cost.total"), 64)
			if !near(total, parentCost+nestedCost) {
				t.Errorf("root pi.cost.total %v, want parent %v + nested %v", total, parentCost, nestedCost)
			}
			nested, _ := strconv.ParseFloat(root.Must(t, "pi.nested.cost.total"), 64)
			if !near(nested, nestedCost) || root.Str("pi.nested.runs") != fmt.Sprint(len(results)) {
				t.Errorf("root nested cost %v runs %s, want %v %d", nested, root.Str("pi.nested.runs"), nestedCost, len(results))
			}
			if n := m.Stats().Anomalies["nested values dropped"]; n != 0 {
				t.Errorf("%d nested values dropped from a real run", n)
			}
			// The model call after the tool starts at its own timestamp.
			last := spantree.Find(forest, "chat fake-model")
			final := last[len(last)-1]
			if final.Start.UnixMilli() != lastChat {
				t.Errorf("final chat starts at %d, want its message's timestamp %d", final.Start.UnixMilli(), lastChat)
			}
		})
	}
}

func countRole[M any](msgs []M, role string) int {
	n := 0
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		var r struct{ Role string }
		_ = json.Unmarshal(b, &r)
		if r.Role == role {
			n++
		}
	}
	return n
}

// A call a tool makes to another tool (ctx.executeTool) hangs below the
// calling tool: live, from its parentToolCallId, and from a session file,
// from the nestedCalls record of it; it counts in the root's tool calls.
func TestNestedCallsBelowTheirTool(t *testing.T) {
	stream := []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p"}
{"type":"agent_start"}
{"type":"turn_start"}
{"type":"tool_execution_start","toolCallId":"c1","toolName":"codemode","args":{}}
{"type":"tool_execution_start","toolCallId":"c1/1","toolName":"read","args":{},"parentToolCallId":"c1"}
{"type":"tool_execution_end","toolCallId":"c1/1","toolName":"read","result":{"content":[]},"isError":true,"durationMs":3,"parentToolCallId":"c1"}
{"type":"tool_execution_end","toolCallId":"c1","toolName":"codemode","result":{"content":[],"details":{}},"isError":false,"durationMs":9}
{"type":"turn_end"}
{"type":"agent_end","messages":[],"willRetry":false}
{"type":"agent_settled"}
`)
	forest, _, _ := replay(t, stream, nil)
	read := spantree.Find(forest, "execute_tool read")
	if len(read) != 1 || read[0].Parent == nil || read[0].Parent.Name != "execute_tool codemode" || read[0].Str("pi.nested.call") != "true" || !read[0].Failed() {
		t.Fatalf("want the read below codemode, failed:\n%s", spantree.Shape(forest))
	}
	if root := spantree.One(t, forest); root.Str("pi.tool_calls") != "2" || root.Str("pi.tool_errors") != "1" {
		t.Errorf("root tool calls %s errors %s, want 2 and 1", root.Str("pi.tool_calls"), root.Str("pi.tool_errors"))
	}
}

// A child's task and its provider's error text are content: without
// capture the failed child says only the safe tokens ("400") and names no
// task; with capture both are there, redacted.
func TestNestedRunPrivacy(t *testing.T) {
	stream := replaytest.Capture(t, v160, "subagent-fail")
	f, _, _ := replay(t, stream, nil)
	run := spantree.Find(f, "invoke_agent scout")[0]
	assertNoText(t, spantree.One(t, f), "secret-token-abc123")
	assertNoText(t, spantree.One(t, f), "Do something impossible")
	if run.Status.Message != "400 invalid_request_error" || run.Str("error.type") != "400" {
		t.Errorf("failed child: status %q, error.type %q", run.Status.Message, run.Str("error.type"))
	}

	r, err := redact.New(redact.WithPatterns(`secret-token-\w+`))
	if err != nil {
		t.Fatal(err)
	}
	f, _, _ = replay(t, stream, nil, agentmap.WithContent(scrubOnly{r}))
	run = spantree.Find(f, "invoke_agent scout")[0]
	assertNoText(t, spantree.One(t, f), "secret-token-abc123")
	if run.Str("pi.nested.task") != "Do something impossible" || !strings.Contains(run.Status.Message, "Invalid request") {
		t.Errorf("with capture: task %q, status %q", run.Str("pi.nested.task"), run.Status.Message)
	}
}

// A live subagent result whose child's messages hold one tool result twice
// gives one execute_tool span below the child, and the repeat is counted.
func TestRepeatedNestedToolResultLive(t *testing.T) {
	child := `[{"role":"assistant","content":[{"type":"toolCall","id":"k1","name":"bash"}],"stopReason":"toolUse","timestamp":1796119200300,"durationMs":10},` +
		`{"role":"toolResult","toolCallId":"k1","toolName":"bash","timestamp":1796119200400,"durationMs":50},` +
		`{"role":"toolResult","toolCallId":"k1","toolName":"bash","timestamp":1796119200500,"durationMs":50},` +
		`{"role":"assistant","content":[],"stopReason":"stop","timestamp":1796119200600,"durationMs":10}]`
	stream := []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p"}
{"type":"agent_start"}
{"type":"turn_start"}
{"type":"tool_execution_start","toolCallId":"c1","toolName":"subagent","args":{}}
{"type":"tool_execution_end","toolCallId":"c1","toolName":"subagent","result":{"content":[],"details":{"results":[{"agent":"scout","messages":` + child + `}]}},"isError":false,"durationMs":900}
{"type":"turn_end"}
{"type":"agent_end","messages":[],"willRetry":false}
{"type":"agent_settled"}
`)
	forest, m, _ := replay(t, stream, nil)
	agents := spantree.Find(forest, "invoke_agent scout")
	if len(agents) != 1 {
		t.Fatalf("%d invoke_agent spans:\n%s", len(agents), spantree.Shape(forest))
	}
	if n := len(spantree.Find(forest, "execute_tool bash")); n != 1 {
		t.Errorf("%d execute_tool bash spans, want 1:\n%s", n, spantree.Shape(forest))
	}
	if n := m.Stats().Anomalies["nested tool results repeated"]; n != 1 {
		t.Errorf("%d repeats counted, want 1", n)
	}
	if n := m.Stats().Anomalies["nested values dropped"]; n != 0 {
		t.Errorf("%d nested values dropped: a repeat is no loss", n)
	}
}

// Record, the public mapper's way in, reads the nested runs of a tool's
// result as the stream path does: the decode stage reads them, not the
// state machine.
func TestRecordReadsNestedRuns(t *testing.T) {
	stream := replaytest.Capture(t, v160, "subagent-fail")
	want, _, _ := replay(t, stream, nil)
	rec := spantree.NewRecorder()
	m := agentmap.New(rec)
	t0 := time.Unix(1_800_000_000, 0)
	for i, line := range bytes.Split(bytes.TrimSpace(stream), []byte("\n")) {
		_ = m.Record(line, t0.Add(time.Duration(i)*time.Millisecond))
	}
	m.Close(agentmap.Ending{Reason: vocab.EndEOF}, t0.Add(time.Hour))
	got := rec.Forest(t)
	if n, w := len(spantree.Find(got, "invoke_agent scout")), len(spantree.Find(want, "invoke_agent scout")); n != w || n == 0 {
		t.Fatalf("Record traced %d invoke_agent scout spans, the stream path %d:\n%s", n, w, spantree.Shape(got))
	}
}
