//go:build realstack

package e2e

import (
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/capture"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
)

// TestSubagents runs the real Pi with its subagent example extension under
// `pi-otel run`, then replays the session file the same run left, and
// checks both traces in Jaeger: the children are invoke_agent spans below
// the tool, with their own chat spans timed by the children's messages,
// their cost counted once in the root's total, and a failed child in error
// without its provider's text.
func TestSubagents(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	for _, tc := range []struct {
		name   string
		runs   int
		failed bool
	}{
		{"subagent-parallel", 2, false},
		{"subagent-chain", 2, false},
		{"subagent-fail", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := prepare(t, tc.name)
			extra, err := s.scenario.Prepare(s.pi) // the agent file and -e extension
			if err != nil {
				t.Fatal(err)
			}
			args := append(extra, s.scenario.Args...)
			for i, a := range args {
				if a == "--no-session" { // keep the session file, to replay it
					args = append(args[:i:i], append([]string{"--session-dir", s.pi.SessionDir}, args[i+1:]...)...)
					break
				}
			}
			s.scenario.Args = args
			r, traces := traced(t, j, s, "e2e-"+tc.name)
			s.check(t, r)
			wantTree(t, v160, tc.name, traces...)
			live := one(t, traces)
			liveStarts := checkNested(t, live, tc.runs, tc.failed)
			noContent(t, live, "secret-token-abc123", "Do something impossible", "Look at the", "Find the entry point")

			// The session file of the same run gives the same nested runs,
			// their chats starting at the same instants (the children's own).
			files, err := filepath.Glob(filepath.Join(s.pi.SessionDir, "*.jsonl"))
			if err != nil || len(files) != 1 {
				t.Fatalf("session files %v %v", files, err)
			}
			rr := runPiOtel(t, s.pi, call{args: []string{"replay", files[0]}, env: otlpGRPC(j, "e2e-"+tc.name+"-file")})
			if rr.code != 0 {
				t.Fatalf("replay exited %d\n%s", rr.code, rr.stderr)
			}
			file := one(t, stored(t, j, "e2e-"+tc.name+"-file", time.Unix(0, 0), rr))
			fileStarts := checkNested(t, file, tc.runs, tc.failed)
			if strings.Join(fileStarts, ",") != strings.Join(liveStarts, ",") {
				t.Errorf("nested chats start at %v from the file, %v live", fileStarts, liveStarts)
			}
		})
	}
}

// checkNested checks the nested runs of tr's subagent tool, and returns
// when their chat spans start.
func checkNested(t *testing.T, tr *jaegertest.Trace, runs int, failed bool) []string {
	t.Helper()
	tool := only(t, tr, "execute_tool subagent")
	agents := tool.Child("invoke_agent scout")
	if len(agents) != runs {
		t.Fatalf("%d nested runs below the tool, want %d:\n%s", len(agents), runs, tr.Tree())
	}
	var starts []string
	nested := 0.0
	for _, a := range agents {
		wantAttrs(t, a, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "scout", "pi.nested.depth": int64(1)})
		if (a.Status.Code == "error") != failed {
			t.Errorf("nested run status %+v, want failed=%v", a.Status, failed)
		}
		if failed && !a.Has("error.type") {
			t.Error("failed nested run has no error.type")
		}
		cost, _ := a.Float("pi.cost.total")
		nested += cost
		chats := a.Child("chat fake-model")
		if len(chats) == 0 {
			t.Errorf("nested run without chat spans")
		}
		childCost := 0.0
		for _, c := range chats {
			v, _ := c.Float("pi.cost.total")
			childCost += v
			if c.Str("gen_ai.agent.name") != "scout" {
				t.Errorf("nested chat agent %q", c.Str("gen_ai.agent.name"))
			}
			starts = append(starts, c.Start.UTC().Format(time.RFC3339Nano))
		}
		if math.Abs(childCost-cost) > 1e-9 {
			t.Errorf("nested run cost %v, its chats %v", cost, childCost)
		}
	}
	// The root's total is every chat's cost, parent and children, once.
	all := 0.0
	for _, c := range tr.Named("chat fake-model") {
		v, _ := c.Float("pi.cost.total")
		all += v
	}
	root := root(t, tr)
	total, _ := root.Float("pi.cost.total")
	if math.Abs(total-all) > 1e-9 || all <= nested {
		t.Errorf("root pi.cost.total %v, the chats sum to %v (nested %v)", total, all, nested)
	}
	if got, _ := root.Float("pi.nested.cost.total"); math.Abs(got-nested) > 1e-9 {
		t.Errorf("root pi.nested.cost.total %v, want %v", got, nested)
	}
	if got, _ := root.Int("pi.nested.runs"); got != int64(runs) {
		t.Errorf("root pi.nested.runs %d, want %d", got, runs)
	}
	return starts
}

// TestTUISubagent: Pi's terminal UI under pi-otel run, in tmux, with one
// subagent call: traced from the session file the TUI writes, the child is
// an invoke_agent span below the tool with its own chat and bash spans.
func TestTUISubagent(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	var s capture.Scenario
	for _, c := range capture.Scenarios() {
		if c.Name == "subagent-single" {
			s = c
		}
	}
	model := fakemodel.Start(t, fakemodel.WithScript(s.Script...))
	pi := pitest.New(t, model.URL(), pitest.WithSettings(map[string]any{"quietStartup": true}))
	extra, err := s.Prepare(pi)
	if err != nil {
		t.Fatal(err)
	}
	service := "e2e-tui-subagent"
	since := time.Now().Add(-time.Second)
	u := startTUI(t, pi, otlpGRPC(j, service), append(pi.Args(), extra...)...)
	u.waitScreen("fake-model")
	u.prompt("Delegate to the scout")
	u.waitScreen("The scout says 3 files.")
	r := u.quit()
	tr := one(t, stored(t, j, service, since, r))
	tool := only(t, tr, "execute_tool subagent")
	child := tool.Child("invoke_agent scout")
	if len(child) != 1 {
		t.Fatalf("want one scout below the tool:\n%s", tr.Tree())
	}
	if len(child[0].Child("chat fake-model")) != 2 || len(child[0].Child("execute_tool bash")) != 1 {
		t.Errorf("the scout's spans:\n%s", tr.Tree())
	}
	if got, _ := root(t, tr).Int("pi.nested.runs"); got != 1 {
		t.Errorf("root pi.nested.runs %d, want 1", got)
	}
}

// TestRPCSubagent: pi-otel rpc in front of Pi with the subagent extension:
// the prompt's run holds the child below the tool, as in json mode.
func TestRPCSubagent(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	s := prepare(t, "subagent-single")
	extra, err := s.scenario.Prepare(s.pi)
	if err != nil {
		t.Fatal(err)
	}
	in, prompt := io.Pipe()
	go func() {
		_, _ = prompt.Write([]byte(`{"id":"p1","type":"prompt","message":"Delegate to the scout"}` + "\n"))
	}()
	service := "e2e-rpc-subagent"
	since := time.Now().Add(-time.Second)
	r := runPiOtel(t, s.pi, call{
		args:  append([]string{"rpc", "--", s.pi.Pi}, s.pi.Args(append(extra, "--mode", "rpc", "--no-session")...)...),
		env:   otlpGRPC(j, service),
		stdin: in,
		onRecord: func(rec map[string]any, _ *os.Process) {
			if rec["type"] == "agent_settled" {
				_ = prompt.Close() // the controller is done: Pi exits
			}
		},
	})
	if r.code != 0 {
		t.Fatalf("pi-otel rpc exited %d\n%s", r.code, r.stderr)
	}
	// Not stored(): its well-formedness is run mode's, and pi.rpc spans are CLIENT.
	tr := one(t, j.WaitService(t, context.Background(), service, since, r.summary.Spans))
	checkNested(t, tr, 1, false)
	if len(tr.Named("pi.rpc prompt")) != 1 {
		t.Errorf("no pi.rpc prompt span:\n%s", tr.Tree())
	}
}
