//go:build realstack

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/capture"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
)

// TestPropagation: every process a bash call of Pi's starts sees the
// TRACEPARENT of that call's execute_tool span, in each mode pi-otel runs
// Pi in, and W3C-aware programs started there join the trace below it.
func TestPropagation(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, *jaegertest.Jaeger)
	}{
		{"json-parallel", func(t *testing.T, j *jaegertest.Jaeger) { propagateJSON(t, j, false) }},
		{"json-session-dir", func(t *testing.T, j *jaegertest.Jaeger) { propagateJSON(t, j, true) }},
		{"rpc-two-prompts", propagateRPC},
		{"nested", propagateNested},
		{"no-harm", propagateNoHarm},
		{"plain-sh", propagatePlainSh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, j)
		})
	}
}

// seenBy is a bash command that writes the TRACEPARENT it sees to dir/id.
func seenBy(dir, id string) string { return "printenv TRACEPARENT >" + filepath.Join(dir, id) }

var traceparentRE = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01\n$`)

// wantCallParents checks that what each call wrote names the execute_tool
// span with its gen_ai.tool.call.id among traces.
func wantCallParents(t *testing.T, dir string, traces []*jaegertest.Trace, ids ...string) {
	t.Helper()
	for _, id := range ids {
		b, err := os.ReadFile(filepath.Join(dir, id))
		if err != nil {
			t.Errorf("call %s: %v", id, err)
			continue
		}
		m := traceparentRE.FindStringSubmatch(string(b))
		if m == nil {
			t.Errorf("call %s saw TRACEPARENT %q", id, b)
			continue
		}
		tool := toolSpan(traces, id)
		if tool == nil {
			t.Errorf("no execute_tool span for call %s", id)
			continue
		}
		if m[1] != tool.TraceID || m[2] != tool.SpanID {
			t.Errorf("call %s saw trace %s span %s; its execute_tool span is trace %s span %s", id, m[1], m[2], tool.TraceID, tool.SpanID)
		}
	}
}

func toolSpan(traces []*jaegertest.Trace, id string) *jaegertest.Span {
	for _, tr := range traces {
		for _, s := range tr.Spans {
			if s.Str("gen_ai.tool.call.id") == id && s.Str("gen_ai.operation.name") == "execute_tool" {
				return s
			}
		}
	}
	return nil
}

// propagateJSON: two parallel calls whose commands have one length, each
// sees its own call's span; with a session file as without.
func propagateJSON(t *testing.T, j *jaegertest.Jaeger, sessionDir bool) {
	out := t.TempDir()
	script := []fakemodel.Response{
		fakemodel.Tools(fakemodel.Bash("call_a", seenBy(out, "call_a")), fakemodel.Bash("call_b", seenBy(out, "call_b"))),
		fakemodel.Text("Done.", 1),
	}
	service := "e2e-propagate-json"
	args := []string{"--mode", "json", "--no-session", "Two calls"}
	if sessionDir {
		service += "-session"
		args = []string{"--mode", "json", "Two calls"}
	}
	s := prepareScenario(t, capture.Scenario{Name: service, Script: script, Args: args})
	if sessionDir {
		s.scenario.Args = append([]string{"--session-dir", s.pi.SessionDir}, args...)
	}
	r, traces := traced(t, j, s, service)
	if len(seenBy(out, "call_a")) != len(seenBy(out, "call_b")) {
		t.Fatal("the two commands must have one length")
	}
	wantCallParents(t, out, traces, "call_a", "call_b")
	if strings.Contains(r.summary.Line, "without") {
		t.Errorf("summary counts misses: %s", r.summary.Line)
	}
}

// propagateRPC: one long-lived Pi, two prompts, a bash call in each: each
// sees its own call's span, not a value set at start.
func propagateRPC(t *testing.T, j *jaegertest.Jaeger) {
	out := t.TempDir()
	sc := rpctest.Scenario{
		Name: "propagate",
		Script: []fakemodel.Response{
			fakemodel.Tools(fakemodel.Bash("call_p1", seenBy(out, "call_p1"))), fakemodel.Text("One.", 1),
			fakemodel.Tools(fakemodel.Bash("call_p2", seenBy(out, "call_p2"))), fakemodel.Text("Two.", 1),
		},
		Drive: func(d *rpctest.Driver) {
			d.Settle(`{"id":"p1","type":"prompt","message":"First"}`)
			d.Settle(`{"id":"p2","type":"prompt","message":"Second"}`)
		},
	}
	service := "e2e-propagate-rpc"
	began := time.Now().Add(-time.Second)
	if _, err := sc.Run(t.TempDir(), rpcProxy(piOtelBin, j, service, "")); err != nil {
		t.Fatal(err)
	}
	// Two runs, each: root, run, two turns with a chat each, a tool.
	traces := j.WaitService(t, context.Background(), service, began, 2*7)
	wantCallParents(t, out, traces, "call_p1", "call_p2")
}

// propagateNested: a pi-otel run started by a bash call, and a small OTel
// program started by another, both sit below the call that started them,
// in its trace.
func propagateNested(t *testing.T, j *jaegertest.Jaeger) {
	jobspan, err := proc.Build(t.TempDir(), "./examples/ci-traceparent/jobspan")
	if err != nil {
		t.Fatal(err)
	}
	model := fakemodel.Start(t)
	pi := pitest.New(t, model.URL())
	inner := append([]string{piOtelBin, "run", "--"}, append([]string{pi.Pi}, pi.Args("--mode", "json", "--no-session", "Inner")...)...)
	// The fake model answers in order: the outer call, the inner Pi, then
	// the outer Pi's answer.
	model.Enqueue(
		fakemodel.Tools(fakemodel.Bash("call_nested", strings.Join(quoteAll(inner), " ")+" >/dev/null")),
		fakemodel.Text("Inner answer.", 1),
		fakemodel.Tools(fakemodel.Bash("call_program", jobspan+" 'test suite' -- true")),
		fakemodel.Text("Outer answer.", 1),
	)
	service := "e2e-propagate-nested"
	since := time.Now().Add(-time.Second)
	r := runPiOtel(t, pi, call{
		args: append([]string{"run", "--"}, append([]string{pi.Pi}, pi.Args("--mode", "json", "--no-session", "Outer")...)...),
		// OTEL_* reach the inner pi-otel and jobspan through Pi.
		env: append(otlpGRPC(j, service), "OTEL_EXPORTER_OTLP_INSECURE=true"),
	})
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	// The outer run (root, run, 3 turns with a chat each, 2 tools), the
	// inner run (root, run, turn, chat) and jobspan's span.
	traces := j.WaitService(t, context.Background(), service, since, 9+4+1)
	if len(traces) != 1 {
		t.Fatalf("%d traces, want one", len(traces))
	}
	tr := traces[0]
	nested, program := toolSpan(traces, "call_nested"), toolSpan(traces, "call_program")
	if nested == nil || program == nil {
		t.Fatalf("tool spans missing:\n%s", tr.Tree())
	}
	var innerRoot, job *jaegertest.Span
	for _, s := range tr.Spans {
		switch {
		case s.Name == "test suite":
			job = s
		case s.Parent == nested:
			innerRoot = s
		}
	}
	if innerRoot == nil || !strings.HasPrefix(innerRoot.Name, "invoke_agent") {
		t.Errorf("no inner pi-otel root below the nested call:\n%s", tr.Tree())
	}
	if job == nil || job.Parent != program {
		t.Errorf("jobspan's span is not below its call:\n%s", tr.Tree())
	}
}

// quoteAll quotes each word for bash.
func quoteAll(words []string) []string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return out
}

// noHarmCommand prints what a hook could disturb: the shell's options, the
// user's BASH_ENV and what it set, the directory after a cd, both
// streams, and an exit code.
const noHarmCommand = `set -euo pipefail; echo "$-"; shopt -o | sort; echo "[$BASH_ENV] [${FROM_USER_ENV-}]"; cd /; pwd; printf 'no newline'; echo err >&2; exit 3`

// propagateNoHarm: a bash call's result is byte for byte the same under
// pi-otel as without it, with a BASH_ENV of the user's.
func propagateNoHarm(t *testing.T, j *jaegertest.Jaeger) {
	script := func() []fakemodel.Response {
		return []fakemodel.Response{fakemodel.Tools(fakemodel.Bash("call_harm", noHarmCommand)), fakemodel.Text("Done.", 1)}
	}
	userEnv := filepath.Join(t.TempDir(), "user-env.sh")
	if err := os.WriteFile(userEnv, []byte("export FROM_USER_ENV=read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for _, through := range []bool{false, true} {
		s := prepareJSON(t, "no-harm", "Harm nothing", script()...)
		var stdout []byte
		if through {
			r := runPiOtel(t, s.pi, call{args: append([]string{"run", "--"}, s.piArgs()...),
				env: append(otlpGRPC(j, "e2e-propagate-no-harm"), "BASH_ENV="+userEnv)})
			stdout = r.stdout
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			cmd := s.pi.Command(ctx, s.pi.Args(s.scenario.Args...)...)
			cmd.Env = append(cmd.Env, "BASH_ENV="+userEnv)
			res, err := s.pi.Run(cmd)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			stdout = res.Stdout
		}
		results[map[bool]string{false: "direct", true: "pi-otel"}[through]] = toolText(t, records(t, stdout), "call_harm")
	}
	if results["direct"] != results["pi-otel"] {
		t.Errorf("the bash result differs:\ndirect:  %q\npi-otel: %q", results["direct"], results["pi-otel"])
	}
	if !strings.Contains(results["pi-otel"], "[read]") {
		t.Errorf("the user's BASH_ENV was not read: %q", results["pi-otel"])
	}
}

// propagatePlainSh: with sh as Pi's shell the hook is never read; the
// call sees the run's context and nothing else changes.
func propagatePlainSh(t *testing.T, j *jaegertest.Jaeger) {
	s := prepareScenario(t, capture.Scenario{
		Name:     "plain-sh",
		Settings: map[string]any{"shellPath": "/bin/sh"},
		Script:   []fakemodel.Response{fakemodel.Tools(fakemodel.Bash("call_sh", "printenv TRACEPARENT; echo ok")), fakemodel.Text("Done.", 1)},
		Args:     []string{"--mode", "json", "--no-session", "Plain sh"},
	})
	r, traces := traced(t, j, s, "e2e-propagate-plain-sh")
	got := toolText(t, records(t, r.stdout), "call_sh")
	rt := root(t, one(t, traces))
	if want := "00-" + rt.TraceID + "-" + rt.SpanID + "-01\nok\n"; got != want {
		t.Errorf("plain sh saw %q, want the run's context %q", got, want)
	}
}

// TestPropagationTUI: Pi's terminal UI under pi-otel run, two prompts with
// a bash call each: each call's processes see its own execute_tool span,
// named from the session file before the call's result is written.
func TestPropagationTUI(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	out := t.TempDir()
	model := fakemodel.Start(t, fakemodel.WithScript(
		fakemodel.Tools(fakemodel.Bash("call_t1", seenBy(out, "call_t1"))), fakemodel.Text("First done.", 1),
		fakemodel.Tools(fakemodel.Bash("call_t2", seenBy(out, "call_t2"))), fakemodel.Text("Second done.", 1),
	))
	pi := pitest.New(t, model.URL(), pitest.WithSettings(map[string]any{"quietStartup": true}))
	service := "e2e-propagate-tui"
	since := time.Now().Add(-time.Second)
	u := startTUI(t, pi, otlpGRPC(j, service), pi.Args()...)
	u.waitScreen("fake-model")
	u.prompt("First prompt")
	u.waitScreen("First done.")
	u.prompt("Second prompt")
	u.waitScreen("Second done.")
	r := u.quit()
	traces := stored(t, j, service, since, r)
	wantCallParents(t, out, traces, "call_t1", "call_t2")
	if strings.Contains(string(r.stderr), "without") {
		t.Errorf("misses counted:\n%s", r.stderr)
	}
}

// TestPropagationWatch: a plain pi with the setup line of docs/watch.md
// in its settings, traced by pi-otel watch: each bash call sees the
// execute_tool span watch exports for it.
func TestPropagationWatch(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	out := t.TempDir()
	model := fakemodel.Start(t, fakemodel.WithScript(
		fakemodel.Tools(fakemodel.Bash("call_w1", seenBy(out, "call_w1")), fakemodel.Bash("call_w2", seenBy(out, "call_w2"))),
		fakemodel.Text("Done.", 1),
	))
	pi := pitest.New(t, model.URL(), pitest.WithSettings(map[string]any{
		"shellCommandPrefix": ". ~/.local/state/pi-otel/hook.bash 2>/dev/null || :",
	}))
	service := "e2e-propagate-watch"
	since := time.Now().Add(-time.Second)
	dir := filepath.Join(t.TempDir(), "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state", "watch.json")
	w := startWatch(t, pi, otlpGRPC(j, service), "--state", state, "--settle", "500ms", dir)
	waitFile(t, state) // the first scan is done
	piPrompt(t, pi, dir, "Two calls")
	waitCommitted(t, w, state, dir)
	sum := w.stop(syscall.SIGTERM)
	traces := stored(t, j, service, since, &result{stderr: w.stderr.Bytes(), summary: sum})
	wantCallParents(t, out, traces, "call_w1", "call_w2")
}
