//go:build realstack

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// The real Pi in RPC mode, driven by a Go controller through the built
// `pi-otel rpc`, exporting to a real Jaeger. Each scenario also runs
// without the proxy: the controller's transcript must be the same.

// rpcProxy runs Pi behind pi-otel rpc, exporting spans to j as service.
// With wire set, Pi runs inside `tee IN | pi | tee OUT`, so the test can
// compare the bytes Pi exchanged with what the controller exchanged.
func rpcProxy(bin string, j *jaegertest.Jaeger, service, wire string) rpctest.Peer {
	return func(env *pitest.Env, piArgs []string) *exec.Cmd {
		args := []string{"rpc",
			"--traces-exporter", "otlp", "--protocol", "grpc", "--endpoint", "http://" + j.OTLPGRPC,
			"--metrics-exporter", "none", "--quiet", "--"}
		if wire != "" {
			args = append(args, "bash", "-c", `set -o pipefail; tee "$WIRE.in" | "$@" | tee "$WIRE.out"`, "bash")
		}
		args = append(args, env.Pi)
		args = append(args, piArgs...)
		cmd := env.Wrap(context.Background(), bin, args...)
		cmd.Env = append(cmd.Env, "OTEL_SERVICE_NAME="+service, "WIRE="+wire)
		return cmd
	}
}

func TestRPCProxy(t *testing.T) {
	t.Parallel()
	bin := piOtelBin
	j := jaegertest.Start(t)
	for _, s := range rpctest.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			check, ok := rpcChecks[s.Name]
			if !ok {
				t.Fatalf("no trace check for scenario %s", s.Name)
			}
			dir := t.TempDir()
			direct, err := s.Run(filepath.Join(dir, "d"), rpctest.Direct)
			if err != nil {
				t.Fatalf("direct run: %v", err)
			}
			began := time.Now().Add(-time.Second)
			service := "pi-rpc-e2e-" + s.Name
			wire := ""
			if s.Name != "sigterm-mid-tool" {
				// A shell between pi-otel and Pi would take the signal.
				wire = filepath.Join(dir, "wire")
			}
			proxied, err := s.Run(filepath.Join(dir, "p"), rpcProxy(bin, j, service, wire))
			if err != nil {
				t.Fatalf("through pi-otel: %v", err)
			}
			if d := rpctest.Normalize(direct).Diff(rpctest.Normalize(proxied)); d != "" {
				t.Errorf("transcript through the proxy differs from a direct run: %s", d)
			}
			if wire != "" {
				rpcSameBytes(t, "controller → pi", proxied.Sent, wire+".in")
				rpcSameBytes(t, "pi → controller", proxied.Received, wire+".out")
			}
			traces := j.WaitService(t, context.Background(), service, began, check.spans)
			spantree.Want(t, spantree.TranscriptTree(s.Name), jaegertest.Forest(t, traces...))
			f := rpcForest(traces)
			if check.attrs != nil {
				check.attrs(t, f, proxied)
			}
		})
	}
}

func rpcSameBytes(t *testing.T, what string, got []byte, file string) {
	t.Helper()
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s: the controller's %d bytes and Pi's %d bytes differ at byte %d", what, len(got), len(want), i)
	}
}

// rpcCheck is what a scenario's traces must show beyond their tree, which
// is the golden tree of the scenario's transcript
// (internal/rpc/testdata/transcripts/NAME.tree).
type rpcCheck struct {
	spans int // spans the service's traces hold in all
	attrs func(t *testing.T, f []*jaegertest.Span, r *rpctest.Result)
}

var rpcChecks = map[string]rpcCheck{
	"prompt-state": {
		spans: 12,
		attrs: func(t *testing.T, f []*jaegertest.Span, r *rpctest.Result) {
			session := ""
			for _, l := range r.Lines {
				if l.Str("id") == "s0" && l.Type() == "response" {
					data, _ := l.Rec["data"].(map[string]any)
					session, _ = data["sessionId"].(string)
				}
			}
			if session == "" {
				t.Fatal("no sessionId in the get_state response")
			}
			for _, root := range []*jaegertest.Span{f[1], f[3]} {
				rpcWant(t, root, map[string]any{"gen_ai.conversation.id": session, "pi.outcome": "ok", "pi.end_reason": "settled"})
				p := root.Children[0]
				if p.Kind != "client" {
					t.Errorf("pi.rpc prompt kind %s", p.Kind)
				}
				rpcWant(t, p, map[string]any{"pi.rpc.command": "prompt", "pi.rpc.success": true, "pi.rpc.disposition": "started"})
			}
			rpcWant(t, f[0], map[string]any{"pi.rpc.id": "s0", "pi.rpc.success": true})
			rpcWant(t, f[2], map[string]any{"pi.rpc.id": "s1", "gen_ai.conversation.id": session})
		},
	},
	"steer-follow-up": {
		spans: 12,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			var kinds []string
			for _, e := range f[0].Events {
				if e.Name == "pi.rpc.queued" {
					kinds = append(kinds, fmt.Sprint(e.Attrs["pi.queue.kind"]))
				}
			}
			if strings.Join(kinds, ",") != "steer,follow_up" {
				t.Errorf("queued events %v", kinds)
			}
		},
	},
	"compact": {
		spans: 12,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			rpcWant(t, f[2].Children[0], map[string]any{"pi.compaction.reason": "manual", "pi.compaction.outcome": "ok"})
		},
	},
	"bash": {
		spans: 8,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			rpcWant(t, f[0], map[string]any{"pi.rpc.id": "b1", "pi.bash.exit_code": int64(0), "pi.bash.cancelled": false, "pi.bash.output_bytes": int64(8)})
			rpcWant(t, f[1], map[string]any{"pi.rpc.id": "b2", "pi.bash.cancelled": true, "pi.bash.output_chunks": int64(1)})
			if _, ok := f[1].Attrs["pi.bash.exit_code"]; ok {
				t.Error("a cancelled bash has no exit code")
			}
		},
	},
	"extension-ui": {
		spans: 17,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			turns := f[0].Children[1].Children
			rpcWant(t, turns[0].Children[2], map[string]any{"pi.ui.outcome": "confirmed", "pi.ui.confirmed": true})
			rpcWant(t, turns[1].Children[2], map[string]any{"pi.ui.outcome": "confirmed", "pi.ui.confirmed": false})
			rpcWant(t, turns[1].Children[1], map[string]any{"error.type": "tool_error"})
			rpcWant(t, f[1], map[string]any{"pi.rpc.disposition": "handled"})
			rpcWant(t, f[1].Children[0], map[string]any{"pi.ui.outcome": "cancelled"})
			ask := f[2].Children[0]
			rpcWant(t, ask, map[string]any{"pi.ui.outcome": "timed_out", "pi.ui.timeout_ms": int64(200)})
			if d := ask.End.Sub(ask.Start); d != 200*time.Millisecond {
				t.Errorf("timed-out input lasted %v, want its timeout", d)
			}
		},
	},
	"extension-error": {
		spans: 6,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			turn := f[0].Children[1].Children[0]
			if !rpcHasEvent(turn, "pi.extension_error", "pi.extension.event", "turn_end") {
				t.Errorf("turn events %+v", turn.Events)
			}
			if !rpcHasEvent(f[1], "pi.extension_error", "pi.extension.path", "command:boom") {
				t.Errorf("/boom events %+v", f[1].Events)
			}
			for _, s := range rpcAll(f) {
				for _, e := range s.Events {
					if _, ok := e.Attrs["pi.extension.error"]; ok {
						t.Error("extension error text exported without content capture")
					}
				}
			}
		},
	},
	"abort-mid-tool": {
		spans: 9,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			rpcWant(t, f[0], map[string]any{"pi.outcome": "aborted", "pi.aborted": true, "pi.end_reason": "settled"})
		},
	},
	"busy": {
		spans: 12,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			p2, p3 := f[0].Children[2], f[0].Children[3]
			rpcWant(t, p2, map[string]any{"pi.rpc.id": "p2", "pi.rpc.success": false, "error.type": "busy"})
			// Pi's error text stays out without --capture-content: the status
			// says only its safe summary (internal/errtext).
			if p2.Status.Code != "error" || p2.Status.Message != "busy" {
				t.Errorf("p2 status %+v", p2.Status)
			}
			rpcWant(t, p3, map[string]any{"pi.rpc.id": "p3", "pi.rpc.disposition": "queued"})
		},
	},
	"malformed": {
		spans: 9,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			if m := f[0].Status.Message; m != "parse_error" {
				t.Errorf("parse status %q", m)
			}
			rpcWant(t, f[4], map[string]any{"pi.rpc.id": "x2", "pi.rpc.command": "unknown", "pi.rpc.type": "no_such_command", "error.type": "unknown_command"})
			rpcWant(t, f[6], map[string]any{"pi.rpc.id": "crlf", "pi.rpc.success": true})
			rpcWant(t, f[7], map[string]any{"pi.rpc.id": "sep\u2028\u2029", "pi.rpc.success": true})
		},
	},
	"eof-mid-run": {
		spans: 6,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			rpcWant(t, f[0], map[string]any{"pi.outcome": "unsettled", "pi.end_reason": "exit", "pi.exit_code": int64(0)})
		},
	},
	"sigterm-mid-tool": {
		spans: 6,
		attrs: func(t *testing.T, f []*jaegertest.Span, _ *rpctest.Result) {
			rpcWant(t, f[0], map[string]any{"pi.outcome": "unsettled", "pi.end_reason": "signal", "pi.signal": "SIGTERM", "pi.exit_code": int64(143)})
			if f[0].Status.Code != "error" {
				t.Errorf("root status %+v", f[0].Status)
			}
		},
	},
}

// rpcForest is every root of traces, by start time then name, with
// children sorted the same way.
func rpcForest(traces []*jaegertest.Trace) []*jaegertest.Span {
	var roots []*jaegertest.Span
	for _, tr := range traces {
		roots = append(roots, tr.Roots()...)
	}
	var order func([]*jaegertest.Span)
	order = func(ss []*jaegertest.Span) {
		sort.SliceStable(ss, func(i, j int) bool {
			if !ss[i].Start.Equal(ss[j].Start) {
				return ss[i].Start.Before(ss[j].Start)
			}
			return ss[i].Name < ss[j].Name
		})
		for _, s := range ss {
			order(s.Children)
		}
	}
	order(roots)
	return roots
}

func rpcAll(f []*jaegertest.Span) []*jaegertest.Span {
	var out []*jaegertest.Span
	var walk func(*jaegertest.Span)
	walk = func(s *jaegertest.Span) {
		out = append(out, s)
		for _, c := range s.Children {
			walk(c)
		}
	}
	for _, s := range f {
		walk(s)
	}
	return out
}

func rpcWant(t *testing.T, s *jaegertest.Span, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Attrs[k]; !ok || got != v {
			t.Errorf("%s: %s = %#v, want %#v", s.Name, k, got, v)
		}
	}
}

func rpcHasEvent(s *jaegertest.Span, name, key, value string) bool {
	for _, e := range s.Events {
		if e.Name == name && e.Attrs[key] == value {
			return true
		}
	}
	return false
}
