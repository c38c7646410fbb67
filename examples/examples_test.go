//go:build realstack

// Package examples runs the examples that need the real Pi, Jaeger or the
// Collector (examples/library's test needs none and lives beside it).
package examples

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/pi-otel/pi-otel/internal/testutil/capture"
	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// hangGuard bounds one example's run; it is not a performance assertion.
const hangGuard = 2 * time.Minute

// run runs cmd with a hang guard, fails the test unless it exits 0, and
// returns its stdout.
func run(t *testing.T, cmd *exec.Cmd) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := proc.Run(cmd, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := proc.ExitCode(cmd.ProcessState); code != 0 {
		t.Fatalf("%s exited %d\nstdout:\n%s\nstderr:\n%s", cmd.Path, code, out, stderr.Bytes())
	}
	return out
}

// otlp is the environment that sends spans to j over OTLP/gRPC as
// service, with pi-otel's metrics off (Jaeger takes none) and no trace
// context inherited from the test's own environment.
func otlp(j *jaegertest.Jaeger, service string) []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + j.OTLPGRPC,
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_SERVICE_NAME=" + service,
		"OTEL_METRICS_EXPORTER=none",
		"TRACEPARENT=", "TRACESTATE=",
	}
}

// withPath puts dir first in env's PATH.
func withPath(env []string, dir string) []string {
	path := os.Getenv("PATH")
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = p
		}
	}
	return append(env, "PATH="+dir+string(os.PathListSeparator)+path)
}

// TestCIJob: jobspan wraps job.sh in a span; the two pi-otel runs inside
// are its children, and each has the tree of a plain answer.
func TestCIJob(t *testing.T) {
	bins := t.TempDir()
	proc.MustBuild(t, bins, "./cmd/pi-otel")
	jobspan := proc.MustBuild(t, bins, "./examples/ci-traceparent/jobspan")
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("Looks good.", 1), fakemodel.Text("Nothing to add.", 1)))
	pi := pitest.New(t, model.URL())

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	since := time.Now().Add(-time.Second)
	cmd := pi.Wrap(ctx, jobspan, "ci job", "--", "bash", repo.Path("examples/ci-traceparent/job.sh"))
	cmd.Env = append(withPath(cmd.Env, bins), otlp(j, "example-ci")...)
	cmd.Env = append(cmd.Env, "PI="+strings.Join(append([]string{pi.Pi}, pi.Args()...), " "))
	run(t, cmd)

	traces := j.WaitService(t, ctx, "example-ci", since, 9) // the job, and 4 spans a run
	root := spantree.One(t, jaegertest.Forest(t, traces...))
	if root.Name != "ci job" || len(root.Children) != 2 {
		t.Fatalf("want the job's span over two runs:\n%s", root)
	}
	for _, run := range root.Children {
		spantree.Want(t, spantree.CaptureTree("pi-1.6.0", "text"), []*spantree.Node{run})
	}
}

// TestToolContext: Pi's bash call runs the checks program, whose spans
// sit below that call's execute_tool span, in the agent's trace.
func TestToolContext(t *testing.T) {
	bins := t.TempDir()
	piOtel := proc.MustBuild(t, bins, "./cmd/pi-otel")
	proc.MustBuild(t, bins, "./examples/tool-context/checks")
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(
		fakemodel.Tools(fakemodel.Bash("call_checks", "checks parse render")),
		fakemodel.Text("Both checks pass.", 1),
	))
	pi := pitest.New(t, model.URL())

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	since := time.Now().Add(-time.Second)
	cmd := pi.Wrap(ctx, piOtel, append([]string{"run", "--", pi.Pi}, pi.Args("--mode", "json", "--no-session", "Run: checks parse render")...)...)
	cmd.Env = append(withPath(cmd.Env, bins), otlp(j, "example-tool-context")...)
	out := run(t, cmd)
	if !bytes.Contains(out, []byte(`ok parse\nok render\n`)) {
		t.Errorf("the bash call did not run the checks:\n%s", out)
	}

	traces := j.WaitService(t, ctx, "example-tool-context", since, 10)
	want := `invoke_agent pi
  pi.agent_run
    pi.turn
      chat fake-model
      execute_tool bash
        checks
          check parse
          check render
    pi.turn
      chat fake-model
`
	if got := spantree.Shape(jaegertest.Forest(t, traces...)); got != want {
		t.Errorf("traces:\n%s\nwant:\n%s", got, want)
	}
}

// TestRPCController: the controller drives the real Pi through the built
// pi-otel rpc; the prompt and the get_state are traced.
func TestRPCController(t *testing.T) {
	bins := t.TempDir()
	piOtel := proc.MustBuild(t, bins, "./cmd/pi-otel")
	controller := proc.MustBuild(t, bins, "./examples/rpc-controller")
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("Hello there.", 1)))
	pi := pitest.New(t, model.URL())

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	since := time.Now().Add(-time.Second)
	args := append([]string{"-prompt", "Say hello", "--", piOtel, "rpc", "--", pi.Pi}, pi.Args("--mode", "rpc", "--no-session")...)
	cmd := pi.Wrap(ctx, controller, args...)
	cmd.Env = append(cmd.Env, otlp(j, "example-rpc")...)
	out := run(t, cmd)
	for _, want := range []string{"prompt ok\n", "agent_settled\n", "session "} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("controller output has no %q:\n%s", want, out)
		}
	}

	traces := j.WaitService(t, ctx, "example-rpc", since, 6)
	want := `invoke_agent pi
  pi.rpc prompt
  pi.agent_run
    pi.turn
      chat fake-model
---
pi.rpc get_state
`
	if got := spantree.Shape(jaegertest.Forest(t, traces...)); got != want {
		t.Errorf("traces:\n%s\nwant:\n%s", got, want)
	}
}

// TestComposeReplay: replay.sh sends to the address the compose file
// publishes for the agent; run against the agent → gateway → Jaeger chain
// started from the same config files, its trace arrives whole.
func TestComposeReplay(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Ports   []string
			Volumes []string
		}
	}
	b, err := os.ReadFile(repo.Path("docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(repo.Path("examples/compose-replay/replay.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(script, []byte("http://localhost:4317")) || !published(compose.Services["agent"].Ports, "4317:4317") {
		t.Errorf("replay.sh's default endpoint is not the agent's published OTLP/gRPC port: %v", compose.Services["agent"].Ports)
	}
	for svc, file := range map[string]string{"agent": "collector/agent.yaml", "gateway-1": "collector/gateway.yaml", "gateway-2": "collector/gateway.yaml", "jaeger": "collector/jaeger.yaml"} {
		if !published(compose.Services[svc].Volumes, "./"+file+":") {
			t.Errorf("compose service %s does not mount %s, the config this test runs", svc, file)
		}
	}

	bins := t.TempDir()
	piOtel := proc.MustBuild(t, bins, "./cmd/pi-otel")
	stack := collectortest.StartStack(t, collectortest.StackOptions{SamplePercentage: "0"})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", repo.Path("examples/compose-replay/replay.sh"))
	cmd.Env = append(os.Environ(), "PI_OTEL="+piOtel, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+stack.AgentOTLP,
		"OTEL_SERVICE_NAME=example-compose", "OTEL_METRICS_EXPORTER=none", "TRACEPARENT=", "TRACESTATE=")
	run(t, cmd)

	// Replayed spans carry the stream's times: search from the epoch.
	j := stack.Jaeger
	traces := j.WaitService(t, ctx, "example-compose", time.Unix(0, 0), 8)
	spantree.Want(t, spantree.CaptureTree("pi-1.6.0", "retry-529"), jaegertest.Forest(t, traces...))
}

// published reports whether one of entries starts with prefix.
func published(entries []string, prefix string) bool {
	for _, e := range entries {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

// TestSubagents: run.sh runs Pi with its subagent extension under pi-otel
// run; Jaeger holds the parent's trace with the child below the tool, the
// tree of the subagent-single capture.
func TestSubagents(t *testing.T) {
	bins := t.TempDir()
	proc.MustBuild(t, bins, "./cmd/pi-otel")
	j := jaegertest.Start(t)
	var script []fakemodel.Response
	for _, s := range capture.Scenarios() {
		if s.Name == "subagent-single" {
			script = s.Script
		}
	}
	model := fakemodel.Start(t, fakemodel.WithScript(script...))
	pi := pitest.New(t, model.URL())

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	since := time.Now().Add(-time.Second)
	cmd := pi.Wrap(ctx, "bash", repo.Path("examples/subagents/run.sh"), "Delegate to the scout")
	cmd.Env = append(withPath(cmd.Env, bins), otlp(j, "example-subagents")...)
	cmd.Env = append(cmd.Env, "PI="+strings.Join(append([]string{pi.Pi}, pi.Args()...), " "))
	run(t, cmd)

	traces := j.WaitService(t, ctx, "example-subagents", since, 11)
	forest := jaegertest.Forest(t, traces...)
	spantree.Want(t, spantree.CaptureTree("pi-1.6.0", "subagent-single"), forest)
	child := spantree.Find(forest, "invoke_agent scout")
	if len(child) != 1 || child[0].Parent == nil || child[0].Parent.Name != "execute_tool subagent" {
		t.Fatalf("want the scout below the subagent tool:\n%s", spantree.Shape(forest))
	}
}
