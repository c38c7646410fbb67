package app_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// TestChildTraceparentKeepsCallersSampling: the TRACEPARENT Pi gets names
// the run's root, keeps the caller's sampled flag (an unsampled caller
// stays unsampled down the tree) and carries its tracestate.
func TestChildTraceparentKeepsCallersSampling(t *testing.T) {
	const caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331"
	for _, c := range []struct {
		name, parent, state, wantFlags, wantState string
	}{
		{"unsampled caller", caller + "-00", "vendor=a,other=b", "00", "vendor=a,other=b"},
		{"sampled caller", caller + "-01", "", "01", ""},
		{"no caller", "", "", "01", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "env")
			env := map[string]string{"TRACEPARENT": c.parent, "TRACESTATE": c.state}
			var stdout, stderr bytes.Buffer
			code := app.Main(t.Context(), app.Env{
				Args: []string{"run", "--quiet", "--traces-exporter", "none", "--",
					"sh", "-c", `printf '%s|%s' "$TRACEPARENT" "$TRACESTATE" >"$0"`, out},
				Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
				Getenv: func(k string) string { return env[k] },
			})
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.Bytes())
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			tp, ts, _ := strings.Cut(string(b), "|")
			parts := strings.Split(tp, "-")
			if len(parts) != 4 || len(parts[1]) != 32 || len(parts[2]) != 16 {
				t.Fatalf("TRACEPARENT %q", tp)
			}
			if c.parent != "" && parts[1] != strings.Split(caller, "-")[1] {
				t.Errorf("trace id %s, want the caller's", parts[1])
			}
			if parts[3] != c.wantFlags {
				t.Errorf("flags %s, want %s", parts[3], c.wantFlags)
			}
			if ts != c.wantState {
				t.Errorf("TRACESTATE %q, want %q", ts, c.wantState)
			}
		})
	}
}

// TestForeignOTelSettingsDoNotStopPi: OTEL_* values meant for other tools
// give one warning each, and Pi (here sh) runs with its exit code.
func TestForeignOTelSettingsDoNotStopPi(t *testing.T) {
	env := map[string]string{
		"OTEL_TRACES_EXPORTER":     "zipkin",
		"OTEL_METRICS_EXPORTER":    "prometheus",
		"OTEL_RESOURCE_ATTRIBUTES": "team=a,broken",
	}
	var stdout, stderr bytes.Buffer
	code := app.Main(t.Context(), app.Env{
		Args:  []string{"run", "--", "sh", "-c", "echo ran; exit 3"},
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return env[k] },
	})
	if code != 3 || stdout.String() != "ran\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, name := range []string{"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_RESOURCE_ATTRIBUTES"} {
		if n := strings.Count(stderr.String(), name); n != 1 || !strings.Contains(stderr.String(), "pi-otel: ignoring ") {
			t.Errorf("%d warnings about %s:\n%s", n, name, stderr.String())
		}
	}
}

// TestRunHandsEachBashCallItsSpan: under run --mode json, each bash call
// Pi starts sees the TRACEPARENT of its own execute_tool span: two
// parallel calls of one message, a call of a second prompt, and two calls
// whose commands have one length and differ only in the middle, run in
// the other order. The calls travel from the decoded records through the
// mapper, which names their spans before Pi starts them; a read call and
// a bash call without a command publish nothing. A bash that is no call
// (a ! command, an extension's) goes on with what it inherited, and is
// no miss. Pi starts each bash right after writing its records: the
// hook's question makes pi-otel read them first, however slow it is.
func TestRunHandsEachBashCallItsSpan(t *testing.T) {
	dir := t.TempDir()
	traces := filepath.Join(dir, "traces.jsonl")
	call := func(id, cmd string) string {
		return `{"type":"toolCall","id":"` + id + `","name":"bash","arguments":{"command":"` + cmd + `"}}`
	}
	start := func(id, cmd string) string {
		return `{"type":"tool_execution_start","toolCallId":"` + id + `","toolName":"bash","args":{"command":"` + cmd + `"}}`
	}
	end := func(id string) string {
		return `{"type":"tool_execution_end","toolCallId":"` + id + `","toolName":"bash","result":{"content":[]},"isError":false}`
	}
	const cmd1, cmd2, cmd3 = "printenv TRACEPARENT", "printenv TRACEPARENT; true", "printenv TRACEPARENT || :"
	assistant := func(blocks ...string) string {
		return `{"type":"message_end","message":{"role":"assistant","stopReason":"toolUse","content":[` + strings.Join(blocks, ",") + `]}}`
	}
	// Pi writes a call's records, then runs its bash (with BASH_ENV, the
	// hook, from the environment pi-otel gave it).
	var script strings.Builder
	emit := func(recs ...string) {
		for _, r := range recs {
			script.WriteString("printf '%s\\n' '" + r + "'\n")
		}
	}
	run := func(id, cmd string) {
		script.WriteString("bash -c '" + cmd + "' >" + filepath.Join(dir, id) + "\n")
	}
	emit(`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/tmp"}`,
		`{"type":"agent_start"}`, `{"type":"turn_start"}`,
		assistant(call("c1", cmd1), call("c2", cmd2), `{"type":"toolCall","id":"r1","name":"read","arguments":{"path":"x"}}`,
			`{"type":"toolCall","id":"c0","name":"bash","arguments":{}}`),
		start("c1", cmd1), start("c2", cmd2))
	run("c1", cmd1)
	run("c2", cmd2)
	emit(end("c1"), end("c2"), `{"type":"turn_end"}`, `{"type":"agent_end","messages":[]}`,
		`{"type":"agent_start"}`, `{"type":"turn_start"}`, assistant(call("c3", cmd3)), start("c3", cmd3))
	run("c3", cmd3)
	emit(end("c3"), `{"type":"turn_end"}`, `{"type":"agent_end","messages":[]}`)
	// 133 bytes each, differing in byte 49 only, which a hash of 64
	// evenly spaced bytes does not read.
	cmd4 := "printenv TRACEPARENT; : pytest tests/test_module_1.py -k slow --maxfail=3 -q --tb=short"
	for len(cmd4) < 133 {
		cmd4 += "."
	}
	i := strings.IndexByte(cmd4, '1')
	cmd5 := cmd4[:i] + "2" + cmd4[i+1:]
	emit(`{"type":"agent_start"}`, `{"type":"turn_start"}`, assistant(call("c4", cmd4), call("c5", cmd5)), start("c4", cmd4), start("c5", cmd5))
	run("c5", cmd5)
	run("c4", cmd4)
	emit(end("c4"), end("c5"), `{"type":"turn_end"}`, `{"type":"agent_end","messages":[]}`)
	run("bang", "printenv TRACEPARENT")

	base := filepath.Join(dir, "ctx")
	var stdout, stderr bytes.Buffer
	code := app.Main(t.Context(), app.Env{
		Args: []string{"run", "--traces-file", traces, "--metrics-exporter", "none", "--propagation-dir", base,
			"--propagation-wait", "10s", "--", "sh", "-c", script.String()},
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] },
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.Bytes())
	}
	if strings.Contains(stderr.String(), "without their own trace context") || strings.Contains(stderr.String(), "without its own trace context") {
		t.Errorf("calls went without their context: %s", stderr.Bytes())
	}
	spans := spantree.All(spantree.ReadOTLPFile(t, traces))
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		b, err := os.ReadFile(filepath.Join(dir, id))
		if err != nil {
			t.Fatal(err)
		}
		var hit *spantree.Node
		for _, s := range spans {
			if s.Str("gen_ai.tool.call.id") == id && s.Str("gen_ai.operation.name") == "execute_tool" {
				hit = s
			}
		}
		if hit == nil {
			t.Fatalf("no execute_tool span for %s", id)
		}
		if got, want := string(b), "00-"+hit.TraceID+"-"+hit.SpanID+"-01\n"; got != want {
			t.Errorf("call %s saw TRACEPARENT %q, want its span's %q", id, got, want)
		}
	}
	bang, err := os.ReadFile(filepath.Join(dir, "bang"))
	if err != nil || !strings.HasPrefix(string(bang), "00-") {
		t.Errorf("a bash of no call saw %q, %v; want the context Pi got", bang, err)
	}
	for _, s := range spans {
		if strings.Contains(string(bang), s.SpanID) && s.Str("gen_ai.operation.name") == "execute_tool" {
			t.Errorf("a bash of no call got the context of %s", s.Name)
		}
	}
	// Nothing is left behind, and no command reached a span.
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Errorf("left in %s: %v", base, ents)
	}
	for _, s := range spans {
		for _, cmd := range []string{cmd1, cmd2, cmd3, cmd4, cmd5} {
			if strings.Contains(s.String(), cmd) {
				t.Errorf("span %s holds a command", s.Name)
			}
		}
	}
}
