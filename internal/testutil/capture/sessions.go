package capture

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
)

// Session captures keep, for one run, both Pi's stdout and the session file
// Pi persisted with --session-dir, so that a differential test can check
// that both give the same trace. They live in testdata/sessions/pi-VERSION:
//
//	NAME.jsonl         the session file, byte for byte
//	NAME.stream.jsonl  stdout of the same run (json mode, or rpc stdout)
//	NAME.in.jsonl      rpc only: what was written to stdin
//	NAME.meta.json     as for stream captures

// SessionScenarios are the scenarios recorded with their session file: the
// json and rpc scenarios that leave something to trace, and a few that only
// the session file shows (a model change, a session name, stop reason length).
func SessionScenarios() []Scenario {
	keep := map[string]bool{
		"text": true, "thinking": true, "bash-tool": true, "parallel-tools": true,
		"retry-529": true, "retry-exhausted": true, "overflow": true,
		"threshold-compaction": true, "cut": true, "two-prompts": true,
		"sigterm-mid-tool": true, "rpc-steer-follow-up": true, "rpc-bash": true,
		"rpc-abort-mid-tool": true, "rpc-compact": true,
		"subagent-single": true, "subagent-parallel": true, "subagent-chain": true, "subagent-fail": true,
	}
	var out []Scenario
	for _, s := range append(Scenarios(), RPCScenarios()...) {
		if keep[s.Name] {
			out = append(out, s)
		}
	}
	return append(out,
		Scenario{
			Name:        "length",
			Description: "the model stops at its token limit (finish_reason length)",
			Script:      []fakemodel.Response{{Text: []string{"A truncated ", "answer"}, FinishReason: "length"}},
			Args:        jsonArgs("Write a lot"),
			Check: func(c *Capture, recs []map[string]any) error {
				return settled(c, recs, 1)
			},
		},
		Scenario{
			Name:        "rpc-settings",
			Description: "thinking level, session name and model set over RPC, then a prompt with a tool",
			Model:       func(m *pitest.Model) { m.Reasoning = true },
			Script: []fakemodel.Response{
				fakemodel.Tools(fakemodel.Bash("call_set_1", "echo set")),
				fakemodel.Text("Settings noted.", 2),
			},
			Args: rpcArgs(),
			RPC: func(d *rpctest.Driver) {
				d.Send(`{"id":"t1","type":"set_thinking_level","level":"high"}`)
				d.Wait(rpctest.IsResponse("set_thinking_level"))
				d.Send(`{"id":"n1","type":"set_session_name","name":"Settings session"}`)
				d.Wait(rpctest.IsResponse("set_session_name"))
				d.Send(`{"id":"m1","type":"set_model","provider":"fake","modelId":"fake-model"}`)
				d.Wait(rpctest.IsResponse("set_model"))
				d.Send(`{"id":"p1","type":"prompt","message":"Note the settings"}`)
				d.Wait(rpctest.IsType("agent_settled"))
			},
			Check: func(c *Capture, recs []map[string]any) error {
				return all(rpcOK(c, recs), expect(count(recs, "agent_settled") == 1, "want one agent_settled"))
			},
		},
	)
}

// SessionCapture is one run recorded with its session file.
type SessionCapture struct {
	Capture
	Session []byte
}

// LoadSession reads a capture written with its session file.
func LoadSession(dir, name string) (*SessionCapture, error) {
	meta, err := loadMeta(dir, name)
	if err != nil {
		return nil, err
	}
	c := &SessionCapture{Capture: Capture{Meta: meta}}
	if c.Session, err = os.ReadFile(filepath.Join(dir, name+".jsonl")); err != nil {
		return nil, err
	}
	if c.Stdout, err = os.ReadFile(filepath.Join(dir, name+".stream.jsonl")); err != nil {
		return nil, err
	}
	if c.Meta.Mode == "rpc" {
		c.Stdin, err = os.ReadFile(filepath.Join(dir, name+".in.jsonl"))
	}
	return c, err
}

// SessionNames lists the session captures in dir (by their meta files).
func SessionNames(dir string) ([]string, error) {
	metas, err := filepath.Glob(filepath.Join(dir, "*.meta.json"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range metas {
		out = append(out, strings.TrimSuffix(filepath.Base(m), ".meta.json"))
	}
	return out, nil
}
