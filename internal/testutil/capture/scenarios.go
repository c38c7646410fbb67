package capture

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
)

// Scenario is one scripted Pi run.
type Scenario struct {
	Name        string
	Description string
	// Versions lists the Pi env vars (pitest.EnvPi…) this scenario is
	// captured for; empty means Pi 1.6.0 only.
	Versions []string
	Model    func(*pitest.Model)
	Settings map[string]any
	Script   []fakemodel.Response
	// Summary, when set, answers Pi's compaction summary requests outside
	// the script.
	Summary string
	// Prepare runs before the captured run (e.g. earlier turns in a session);
	// it returns extra args for the captured run.
	Prepare func(env *pitest.Env) ([]string, error)
	Args    []string // after the provider/model flags
	OnLine  lineHook // json mode only
	// RPC drives an RPC scenario through stdin (rpctest's driver); the
	// runner closes stdin afterwards.
	RPC func(d *rpctest.Driver)
	// Check asserts what the capture must show, for fresh and committed
	// captures alike.
	Check func(c *Capture, recs []map[string]any) error
}

// Mode is "rpc" for RPC scenarios, else "json".
func (s Scenario) Mode() string {
	if s.RPC != nil {
		return "rpc"
	}
	return "json"
}

func jsonArgs(prompts ...string) []string {
	return append([]string{"--mode", "json", "--no-session"}, prompts...)
}

func rpcArgs() []string { return []string{"--mode", "rpc", "--no-session"} }

// Helpers over decoded records.

// Types lists the type of each record.
func Types(recs []map[string]any) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		t, _ := r["type"].(string)
		out = append(out, t)
	}
	return out
}

func count(recs []map[string]any, typ string) int {
	n := 0
	for _, t := range Types(recs) {
		if t == typ {
			n++
		}
	}
	return n
}

func first(recs []map[string]any, typ string) map[string]any {
	for _, r := range recs {
		if r["type"] == typ {
			return r
		}
	}
	return nil
}

func expect(cond bool, format string, args ...any) error {
	if cond {
		return nil
	}
	return fmt.Errorf(format, args...)
}

func all(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// settled checks a json run that finished normally.
func settled(c *Capture, recs []map[string]any, n int) error {
	return all(
		expect(c.Meta.ExitCode == 0, "exit code %d, want 0", c.Meta.ExitCode),
		expect(len(recs) > 0 && recs[0]["type"] == "session", "first record %v, want session header", firstType(recs)),
		expect(count(recs, "agent_settled") == n, "%d agent_settled, want %d", count(recs, "agent_settled"), n),
	)
}

func firstType(recs []map[string]any) any {
	if len(recs) == 0 {
		return nil
	}
	return recs[0]["type"]
}

// signalOnTool sends sig once the bash tool has started (and had time to
// spawn its child).
func signalOnTool(sig syscall.Signal) lineHook {
	sent := false
	return func(line []byte, rec map[string]any, p *os.Process) {
		if !sent && rec["type"] == "tool_execution_start" {
			sent = true
			go func() {
				// Wait until the tool's shell is up so the signal lands mid-tool.
				sleepMs(500)
				_ = p.Signal(sig)
			}()
		}
	}
}

// midToolSignal is scenario name: sig to Pi while a bash sleep runs. exit
// checks how Pi ended; the run never ends (no agent_end).
func midToolSignal(name string, sig syscall.Signal, exit func(Meta) error) Scenario {
	return Scenario{
		Name:        name,
		Description: launch.SignalName(sig) + " to pi while a bash sleep runs",
		Script: []fakemodel.Response{
			fakemodel.Tools(fakemodel.Bash("call_sleep", "sleep 30")),
			fakemodel.Text("unused", 1),
		},
		Args:   jsonArgs("Sleep"),
		OnLine: signalOnTool(sig),
		Check: func(c *Capture, recs []map[string]any) error {
			return all(exit(c.Meta), expect(count(recs, "agent_end") == 0, "agent_end after %s", launch.SignalName(sig)))
		},
	}
}

func sleepMs(ms int) { time.Sleep(time.Duration(ms) * time.Millisecond) }

const (
	lineSep = "\u2028"
	paraSep = "\u2029"
)

// Scenarios lists every capture, in the order they are recorded.
func Scenarios() []Scenario {
	return append([]Scenario{
		{
			Name:        "text",
			Description: "plain text answer in 3 deltas",
			Versions:    []string{pitest.EnvPi, pitest.EnvPi103, pitest.EnvPi073},
			Script:      []fakemodel.Response{fakemodel.Text("Hello from the fake model.", 3)},
			Args:        jsonArgs("Say hello"),
			Check: func(c *Capture, recs []map[string]any) error {
				return all(
					expect(c.Meta.ExitCode == 0, "exit %d", c.Meta.ExitCode),
					expect(count(recs, "agent_end") == 1, "want one agent_end"),
					expect(count(recs, "message_update") >= 3, "want >= 3 message_update"),
				)
			},
		},
		{
			Name:        "thinking",
			Description: "reasoning_content deltas then text, model reasoning:true, --thinking high",
			Model:       func(m *pitest.Model) { m.Reasoning = true },
			Script: []fakemodel.Response{fakemodel.Thinking("Let me think about this carefully.", 3, "The answer is 42.", 2).
				WithUsage(fakemodel.Usage{PromptTokens: 1200, CompletionTokens: 80, CachedTokens: 1000, ReasoningTokens: 50})},
			Args: append([]string{"--thinking", "high"}, jsonArgs("What is the answer?")...),
			Check: func(c *Capture, recs []map[string]any) error {
				return all(settled(c, recs, 1), expect(hasDelta(recs, "thinking_delta"), "no thinking_delta"))
			},
		},
		{
			Name:        "bash-tool",
			Description: "one bash tool call, then a text answer",
			Versions:    []string{pitest.EnvPi, pitest.EnvPi103, pitest.EnvPi073},
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Bash("call_bash_1", "echo hello from bash")),
				fakemodel.Text("The command printed hello.", 2),
			},
			Args: jsonArgs("Run echo"),
			Check: func(c *Capture, recs []map[string]any) error {
				return all(
					expect(c.Meta.ExitCode == 0, "exit %d", c.Meta.ExitCode),
					expect(count(recs, "tool_execution_end") == 1, "want one tool_execution_end"),
					expect(count(recs, "turn_end") == 2, "want two turn_end"),
				)
			},
		},
		{
			Name:        "parallel-tools",
			Description: "4 tool calls in one response: 2 succeed, a read of a missing file, a bash exit 3",
			Script: []fakemodel.Response{
				fakemodel.Tools(
					fakemodel.Bash("call_ok_1", "echo one"),
					fakemodel.Bash("call_ok_2", "printf two"),
					fakemodel.Call("call_missing", "read", map[string]any{"path": "does-not-exist.txt"}),
					fakemodel.Bash("call_exit3", "echo failing >&2; exit 3"),
				),
				fakemodel.Text("Two worked, two failed.", 2),
			},
			Args: jsonArgs("Run four tools"),
			Check: func(c *Capture, recs []map[string]any) error {
				errs := 0
				for _, r := range recs {
					if r["type"] == "tool_execution_end" && r["isError"] == true {
						errs++
					}
				}
				return all(settled(c, recs, 1),
					expect(count(recs, "tool_execution_end") == 4, "want 4 tool_execution_end"),
					expect(errs == 2, "%d failed tools, want 2", errs))
			},
		},
		{
			Name:        "retry-529",
			Description: "one HTTP 529 Overloaded, then success",
			Versions:    []string{pitest.EnvPi, pitest.EnvPi103, pitest.EnvPi073},
			Script:      []fakemodel.Response{fakemodel.Overloaded(), fakemodel.Text("Recovered after overload.", 2)},
			Args:        jsonArgs("Hello"),
			Check: func(c *Capture, recs []map[string]any) error {
				return all(
					expect(c.Meta.ExitCode == 0, "exit %d", c.Meta.ExitCode),
					expect(count(recs, "auto_retry_start") == 1, "want one auto_retry_start"),
				)
			},
		},
		{
			Name:        "retry-exhausted",
			Description: "HTTP 503 on every attempt until Pi gives up (retry.maxRetries 2)",
			Settings:    map[string]any{"retry": map[string]any{"maxRetries": 2}},
			Script:      []fakemodel.Response{fakemodel.Unavailable(), fakemodel.Unavailable(), fakemodel.Unavailable()},
			Args:        jsonArgs("Hello"),
			Check: func(c *Capture, recs []map[string]any) error {
				end := first(recs, "auto_retry_end")
				return all(
					expect(count(recs, "auto_retry_start") == 2, "%d auto_retry_start, want 2", count(recs, "auto_retry_start")),
					expect(end != nil && end["success"] == false, "want auto_retry_end success:false"),
				)
			},
		},
		{
			Name:        "overflow",
			Description: "second prompt gets HTTP 400 'exceeds the context window': overflow compaction of the first exchange, then a retry",
			Settings:    map[string]any{"compaction": map[string]any{"keepRecentTokens": 50}},
			Summary:     "Summary: the user greeted and got a long answer.",
			Script: []fakemodel.Response{
				fakemodel.Text(strings.Repeat("A long first answer that fills the context. ", 40), 4),
				fakemodel.ContextOverflow(),
				fakemodel.Text("Answer after compaction.", 2),
			},
			Args: jsonArgs("First prompt", "Second prompt"),
			Check: func(c *Capture, recs []map[string]any) error {
				cs := first(recs, "compaction_start")
				return all(settled(c, recs, 2),
					expect(cs != nil && cs["reason"] == "overflow", "no overflow compaction_start"),
					expect(count(recs, "compaction_end") == 1, "want one compaction_end"))
			},
		},
		{
			Name:        "threshold-compaction",
			Description: "contextWindow 8000, reserveTokens 2000: usage of 7000 prompt tokens triggers compaction after agent_end (prompt 1); 28 KB of tool output triggers it mid-run (prompt 2)",
			Model:       func(m *pitest.Model) { m.ContextWindow = 8000; m.MaxTokens = 1024 },
			Settings:    map[string]any{"compaction": map[string]any{"reserveTokens": 2000, "keepRecentTokens": 200}},
			Summary:     "Summary: earlier work, compacted.",
			Script: []fakemodel.Response{
				// Prompt 1 ends above the threshold by its reported usage:
				// compaction after agent_end.
				fakemodel.Text(strings.Repeat("First answer, filling context. ", 30), 3).
					WithUsage(fakemodel.Usage{PromptTokens: 7000, CompletionTokens: 200}),
				// After a compaction Pi estimates from message sizes, so prompt 2
				// crosses the threshold with 28 KB of tool output: compaction
				// mid-run, before the next turn.
				fakemodel.Tools(fakemodel.Bash("call_th_1", "head -c 28000 /dev/zero | tr '\\0' 'y' | fold -w 100")).
					WithUsage(fakemodel.Usage{PromptTokens: 1700, CompletionTokens: 30}),
				fakemodel.Text("Done after the tool.", 2).
					WithUsage(fakemodel.Usage{PromptTokens: 1800, CompletionTokens: 20}),
			},
			Args: jsonArgs("First prompt", "Second prompt"),
			Check: func(c *Capture, recs []map[string]any) error {
				return all(settled(c, recs, 2),
					expect(count(recs, "compaction_start") == 2, "%d compaction_start, want 2", count(recs, "compaction_start")))
			},
		},
		{
			Name:        "cut",
			Description: "the connection is cut mid-stream, Pi retries, the retry succeeds",
			Script: []fakemodel.Response{
				fakemodel.Text("This answer will be cut off before it ends.", 6).WithCutAfter(3),
				fakemodel.Text("Second try works.", 2),
			},
			Args: jsonArgs("Hello"),
			Check: func(c *Capture, recs []map[string]any) error {
				return all(settled(c, recs, 1), expect(count(recs, "auto_retry_start") == 1, "want one auto_retry_start"))
			},
		},
		{
			Name:        "big-output",
			Description: "bash prints 2 MB; the final text holds raw U+2028 and U+2029",
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Bash("call_big", "head -c 2097152 /dev/zero | tr '\\0' 'x' | fold -w 1023")),
				fakemodel.Text("Line"+lineSep+"separator and paragraph"+paraSep+"separator.", 2),
			},
			Args: jsonArgs("Print a lot"),
			Check: func(c *Capture, recs []map[string]any) error {
				return all(settled(c, recs, 1),
					expect(strings.Contains(string(c.Stdout), lineSep), "no raw U+2028 in stdout"),
					expect(strings.Contains(string(c.Stdout), paraSep), "no raw U+2029 in stdout"))
			},
		},
		midToolSignal("sigterm-mid-tool", syscall.SIGTERM, func(m Meta) error {
			return expect(m.ExitCode == 143, "exit %d, want 143", m.ExitCode)
		}),
		midToolSignal("sigint-mid-tool", syscall.SIGINT, func(m Meta) error {
			// Pi installs no SIGINT handler in json mode: Node dies of the
			// signal, which a shell reports as 130.
			return expect(m.Signal == "signal: interrupt", "exit %d %q, want death by SIGINT", m.ExitCode, m.Signal)
		}),
		{
			Name:        "two-prompts",
			Description: "two prompt arguments in one json process",
			Script: []fakemodel.Response{
				fakemodel.Text("First answer.", 2),
				fakemodel.Text("Second answer.", 2),
			},
			Args: jsonArgs("First prompt", "Second prompt"),
			Check: func(c *Capture, recs []map[string]any) error {
				return settled(c, recs, 2)
			},
		},
	}, subagentScenarios()...)
}

func hasDelta(recs []map[string]any, typ string) bool {
	for _, r := range recs {
		if ev, ok := r["assistantMessageEvent"].(map[string]any); ok && ev["type"] == typ {
			return true
		}
	}
	return false
}

// anyResponse matches a response to any command, or to a line that was none.
func anyResponse(l rpctest.Line) bool { return l.Type() == "response" }

func responses(recs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["type"] == "response" {
			out = append(out, r)
		}
	}
	return out
}

// rpcOK checks an RPC run that ended by closing stdin.
func rpcOK(c *Capture, recs []map[string]any) error {
	return all(
		expect(c.Meta.ExitCode == 0, "exit %d, want 0", c.Meta.ExitCode),
		expect(len(recs) == 0 || recs[0]["type"] != "session", "rpc mode wrote a session header"),
	)
}

// rpcSession gives s the fake model's side (script, settings, summary) of
// the rpctest scenario name: those RPC captures play the same sessions as
// the rpc tests' transcripts, only driven in steps of their own.
func rpcSession(name string, s Scenario) Scenario {
	r, ok := rpctest.ByName(name)
	if !ok {
		panic("capture: rpctest has no scenario " + name)
	}
	s.Script, s.Settings, s.Summary = r.Script, r.Settings, r.Summary
	return s
}

// RPCScenarios are driven through stdin; each closes stdin at the end.
// All run Pi with rpcArgs and must end as rpcOK says, besides their own
// Check.
func RPCScenarios() []Scenario {
	out := []Scenario{
		{
			Name:        "rpc-prompt-state",
			Description: "prompt, wait for agent_settled, get_state",
			Script:      []fakemodel.Response{fakemodel.Text("Hello over RPC.", 3)},
			RPC: func(d *rpctest.Driver) {
				d.Send(`{"id":"p1","type":"prompt","message":"Say hello"}`)
				d.Wait(rpctest.IsType("agent_settled"))
				d.Send(`{"id":"s1","type":"get_state"}`)
				d.Wait(rpctest.IsResponse("get_state"))
			},
			Check: func(c *Capture, recs []map[string]any) error {
				return all(expect(count(recs, "agent_settled") == 1, "want one agent_settled"),
					expect(len(responses(recs)) == 2, "want 2 responses"))
			},
		},
		rpcSession("steer-follow-up", Scenario{
			Name:        "rpc-steer-follow-up",
			Description: "steer and follow_up sent while a bash tool runs",
			RPC: func(d *rpctest.Driver) {
				d.Send(`{"id":"p1","type":"prompt","message":"Run a slow command"}`)
				d.Wait(rpctest.IsToolStart("bash"))
				d.Send(`{"id":"st1","type":"steer","message":"Also mention the weather"}`)
				d.Wait(rpctest.IsResponse("steer"))
				d.Send(`{"id":"fu1","type":"follow_up","message":"Then summarise"}`)
				d.Wait(rpctest.IsResponse("follow_up"))
				d.Wait(rpctest.IsType("agent_settled"))
				d.Send(`{"id":"s1","type":"get_state"}`)
				d.Wait(rpctest.IsResponse("get_state"))
			},
			Check: func(c *Capture, recs []map[string]any) error {
				return expect(count(recs, "queue_update") >= 2, "want queue_update records")
			},
		}),
		rpcSession("compact", Scenario{
			Name:        "rpc-compact",
			Description: "two prompts, then a manual compact command",
			RPC: func(d *rpctest.Driver) {
				d.Send(`{"id":"p1","type":"prompt","message":"First"}`)
				d.Wait(rpctest.IsType("agent_settled"))
				d.Send(`{"id":"p2","type":"prompt","message":"Second"}`)
				d.Wait(rpctest.IsType("agent_settled"))
				d.Send(`{"id":"c1","type":"compact"}`)
				d.Wait(rpctest.IsResponse("compact"))
			},
			Check: func(c *Capture, recs []map[string]any) error {
				cs := first(recs, "compaction_start")
				return expect(cs != nil && cs["reason"] == "manual", "no manual compaction_start")
			},
		}),
		rpcSession("bash", Scenario{
			Name:        "rpc-bash",
			Description: "bash command, then a long bash command aborted with abort_bash, then a prompt that sees the output",
			RPC: func(d *rpctest.Driver) {
				d.Send(`{"id":"b1","type":"bash","command":"echo one; echo two"}`)
				d.Wait(rpctest.IsResponse("bash"))
				d.Send(`{"id":"b2","type":"bash","command":"echo started; sleep 20; echo never"}`)
				d.Wait(rpctest.IsType("bash_execution_update"))
				d.Send(`{"id":"ab1","type":"abort_bash"}`)
				d.Wait(rpctest.IsResponse("abort_bash"))
				d.Wait(rpctest.IsResponseID("b2"))
				d.Send(`{"id":"p1","type":"prompt","message":"What did bash print?"}`)
				d.Wait(rpctest.IsType("agent_settled"))
			},
			Check: func(c *Capture, recs []map[string]any) error {
				return expect(count(recs, "bash_execution_update") >= 2, "want bash_execution_update records")
			},
		}),
		rpcSession("abort-mid-tool", Scenario{
			Name:        "rpc-abort-mid-tool",
			Description: "abort while a bash tool sleeps",
			RPC: func(d *rpctest.Driver) {
				d.Send(`{"id":"p1","type":"prompt","message":"Sleep"}`)
				d.Wait(rpctest.IsToolStart("bash"))
				d.Pause(300 * time.Millisecond)
				d.Send(`{"id":"a1","type":"abort"}`)
				d.Wait(rpctest.IsType("agent_settled"))
			},
			Check: func(c *Capture, recs []map[string]any) error {
				st := first(recs, "agent_settled")
				return expect(st != nil && st["aborted"] == true, "want agent_settled aborted:true")
			},
		}),
		{
			Name:        "rpc-malformed",
			Description: "lines that are not JSON, not objects, or not commands; then a valid get_state",
			RPC: func(d *rpctest.Driver) {
				d.Send(`this is not json`)
				d.Wait(anyResponse)
				d.Send(`[1,2,3]`)
				d.Wait(anyResponse)
				d.Send(`42`)
				d.Wait(anyResponse)
				d.Send(`{"id":"x1"}`)
				d.Wait(anyResponse)
				d.Send(`{"id":"x2","type":"no_such_command"}`)
				d.Wait(anyResponse)
				d.Send(`{"id":"s1","type":"get_state"}`)
				d.Wait(rpctest.IsResponse("get_state"))
			},
			Check: func(c *Capture, recs []map[string]any) error {
				return expect(len(responses(recs)) == 6, "%d responses, want 6", len(responses(recs)))
			},
		},
	}
	for i := range out {
		out[i].Args = rpcArgs()
		out[i].Check = rpcChecked(out[i].Check)
	}
	return out
}

// rpcChecked is check after rpcOK.
func rpcChecked(check func(*Capture, []map[string]any) error) func(*Capture, []map[string]any) error {
	return func(c *Capture, recs []map[string]any) error { return all(rpcOK(c, recs), check(c, recs)) }
}
