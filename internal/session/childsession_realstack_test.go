//go:build realstack

package session_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
)

// The subagent example extension of the real Pi 1.6.0, changed to persist
// each child's session (--session-dir, --session-id in place of
// --no-session) and to name the child's file in its result (sessionFile),
// as tools built on it do. Replaying the parent's session file reads the
// child's file: the child's run is traced below the tool once, from its own
// file, and carries the child's session id. Checked in a real Jaeger.
func TestChildSessionFileNestedInJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	since := time.Now().Add(-time.Second)
	parent, child := runPersisting(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	childID, _ := ids(t, child)

	service := fmt.Sprintf("child-session-%d", time.Now().UnixNano())
	m := replayInto(t, j, service, parent)
	if m[1] != "1" {
		t.Fatalf("%s traces, want 1", m[1])
	}
	var spans int
	fmt.Sscan(m[2], &spans)
	traces := j.WaitService(t, ctx, service, since, spans)
	if len(traces) != 1 {
		t.Fatalf("Jaeger holds %d traces", len(traces))
	}
	tr := traces[0]
	agents := tr.Named("invoke_agent scout")
	if len(agents) != 1 {
		t.Fatalf("%d invoke_agent scout spans, want 1:\n%s", len(agents), tr.Tree())
	}
	a := agents[0]
	if got := a.Str("pi.nested.session_id"); got != childID {
		t.Errorf("pi.nested.session_id %q, want the child's %q", got, childID)
	}
	// The child asked the model twice and ran bash once: from its file,
	// not twice (file and copy).
	chats, tools := 0, len(a.Child("execute_tool bash"))
	for _, c := range a.Children {
		if strings.HasPrefix(c.Name, "chat ") {
			chats++
		}
	}
	if chats != 2 || tools != 1 {
		t.Errorf("the child has %d chat and %d bash spans, want 2 and 1:\n%s", chats, tools, tr.Tree())
	}
	root := tr.Roots()[0]
	if n, _ := root.Int("pi.nested.runs"); n != 1 {
		t.Errorf("root pi.nested.runs %d, want 1", n)
	}
	if in, _ := a.Int("gen_ai.usage.input_tokens"); in <= 0 {
		t.Errorf("the child's input tokens %d", in)
	}
	if a.Start.Before(tr.Named("execute_tool subagent")[0].Start) {
		t.Errorf("the child starts before its tool")
	}
}

// replayInto replays file into Jaeger as service and returns the summary's
// trace and span counts.
func replayInto(t *testing.T, j *jaegertest.Jaeger, service, file string) []string {
	t.Helper()
	var stderr bytes.Buffer
	vars := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.OTLPGRPC,
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_SERVICE_NAME":           service,
		"OTEL_METRICS_EXPORTER":       "none",
	}
	if code := app.Main(t.Context(), app.Env{Args: []string{"replay", file}, Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(k string) string { return vars[k] }}); code != 0 {
		t.Fatalf("replay exited %d: %s", code, stderr.String())
	}
	m := regexp.MustCompile(`(\d+) traces?.*?(\d+) spans`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("summary %q", stderr.String())
	}
	return m
}

// A child session whose header names the parent's session file, replayed
// on its own after the parent's: its root links to the parent's
// execute_tool subagent span, checked in a real Jaeger.
func TestChildSessionLinksInJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	since := time.Now().Add(-time.Second)
	parent, child := runPersisting(t, true)
	if b, _ := os.ReadFile(child); !bytes.Contains(b, []byte(`"parentSession":"`+parent+`"`)) {
		t.Fatalf("the child's header does not name the parent: %.300s", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	service := fmt.Sprintf("child-link-%d", time.Now().UnixNano())
	var spans int
	for _, f := range []string{parent, child} {
		m := replayInto(t, j, service, f)
		if m[1] != "1" {
			t.Fatalf("%s: %s traces, want 1", f, m[1])
		}
		n := 0
		fmt.Sscan(m[2], &n)
		spans += n
	}
	traces := j.WaitService(t, ctx, service, since, spans)
	if len(traces) != 2 {
		t.Fatalf("Jaeger holds %d traces, want 2", len(traces))
	}
	var tool *jaegertest.Span
	var childRoot *jaegertest.Span
	for _, tr := range traces {
		if ts := tr.Named("execute_tool subagent"); len(ts) == 1 {
			tool = ts[0]
		} else if r := tr.Roots(); len(r) == 1 {
			childRoot = r[0]
		}
	}
	if tool == nil || childRoot == nil {
		t.Fatalf("no parent tool span or no child root")
	}
	if len(childRoot.Links) != 1 {
		t.Fatalf("child root links %v, want 1", childRoot.Links)
	}
	l := childRoot.Links[0]
	if l.TraceID != tool.TraceID || l.SpanID != tool.SpanID || l.Attrs["pi.link"] != "parent_tool" {
		t.Errorf("link %+v, want %s/%s pi.link=parent_tool", l, tool.TraceID, tool.SpanID)
	}
}

// runPersisting runs the real Pi with the persisting extension, one
// subagent call, and returns the parent's and the child's session files.
// With header, the extension writes the child's session header itself,
// naming the parent's session file (parentSession), as an extension that
// creates the child's session with the SDK does.
func runPersisting(t *testing.T, header bool) (parent, child string) {
	t.Helper()
	model := fakemodel.Start(t, fakemodel.WithScript(
		fakemodel.Tools(fakemodel.Call("call_sub_1", "subagent", map[string]any{"agent": "scout", "task": "Count the files"})),
		fakemodel.Tools(fakemodel.Bash("call_child_bash", "echo child work")),
		fakemodel.Text("The child found 3 files.", 2),
		fakemodel.Text("The scout says 3 files.", 2),
	))
	env := pitest.New(t, model.URL())
	ext := persistingSubagents(t, env)
	children := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := env.Command(ctx, env.Args("--mode", "json", "-e", ext, "--session-dir", env.SessionDir, "-p", "Delegate to the scout")...)
	cmd.Env = append(cmd.Env, "PI_OTEL_CHILD_SESSIONS="+children)
	if header {
		cmd.Env = append(cmd.Env, "PI_OTEL_CHILD_HEADER=1")
	}
	res, err := env.Run(cmd)
	if err != nil {
		t.Fatalf("pi: %v\n%s", err, res.Stderr)
	}
	parents, _ := filepath.Glob(filepath.Join(env.SessionDir, "*.jsonl"))
	kids, _ := filepath.Glob(filepath.Join(children, "*.jsonl"))
	if len(parents) != 1 || len(kids) != 1 {
		t.Fatalf("%d parent and %d child session files", len(parents), len(kids))
	}
	parent, child = parents[0], kids[0]
	if b, _ := os.ReadFile(parent); !bytes.Contains(b, []byte(`"sessionFile":"`+child+`"`)) {
		t.Fatalf("the parent's result does not name the child's file %s", child)
	}
	return parent, child
}

// persistingSubagents writes the scout agent and a copy of the example
// extension that persists its children's sessions in
// $PI_OTEL_CHILD_SESSIONS and names each file in its result.
func persistingSubagents(t *testing.T, env *pitest.Env) string {
	t.Helper()
	agents := filepath.Join(env.AgentDir, "agents")
	if err := os.MkdirAll(agents, 0o755); err != nil {
		t.Fatal(err)
	}
	scout := "---\nname: scout\ndescription: Looks things up for the parent agent\ntools: bash, read\n---\n\nYou are a scout. Answer briefly.\n"
	if err := os.WriteFile(filepath.Join(agents, "scout.md"), []byte(scout), 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := filepath.EvalSymlinks(env.Pi)
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for dir := filepath.Dir(bin); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "package.json")); err == nil {
			src = filepath.Join(dir, "examples", "extensions", "subagent")
			break
		}
	}
	dst := filepath.Join(t.TempDir(), "subagent")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(dst, "index.ts")
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, r := range [][2]string{
		{`const args: string[] = ["--mode", "json", "-p", "--no-session"];`,
			`const childDir = process.env.PI_OTEL_CHILD_SESSIONS as string;
	const childId = "child-" + Math.random().toString(36).slice(2, 10);
	if (process.env.PI_OTEL_CHILD_HEADER && parentSessionFile) {
		const now = new Date().toISOString();
		fs.writeFileSync(path.join(childDir, now.replace(/[:.]/g, "-") + "_" + childId + ".jsonl"),
			JSON.stringify({ type: "session", version: 3, id: childId, timestamp: now, cwd: process.cwd(), parentSession: parentSessionFile }) + "\n");
	}
	const args: string[] = ["--mode", "json", "-p", "--session-dir", childDir, "--session-id", childId];`},
		{`interface SingleResult {`, `let parentSessionFile: string | undefined;

interface SingleResult {`},
		{`async execute(_toolCallId, params, signal, onUpdate, ctx) {`,
			`async execute(_toolCallId, params, signal, onUpdate, ctx) {
			parentSessionFile = ctx.sessionManager.getSessionFile();`},
		{`currentResult.exitCode = outcome.code;`,
			`const childFile = fs.readdirSync(childDir).find((n) => n.endsWith("_" + childId + ".jsonl"));
		if (childFile) (currentResult as any).sessionFile = path.join(childDir, childFile);
		currentResult.exitCode = outcome.code;`},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("the example extension changed: no %q", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	if err := os.WriteFile(idx, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "index.ts")
}

// pi-otel watch follows both the parent's and the child's session files
// (the child's header names the parent): the child's run is in the
// parent's trace, nested, and not traced again on its own.
func TestChildSessionWatchedOnce(t *testing.T) {
	j := jaegertest.Start(t)
	since := time.Now().Add(-time.Second)
	parent, child := runPersisting(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The parent's trace, replayed on its own, for its span count.
	m := replayInto(t, j, fmt.Sprintf("child-watch-replay-%d", time.Now().UnixNano()), parent)
	var spans int
	fmt.Sscan(m[2], &spans)

	bin := proc.MustBuild(t, t.TempDir(), "./cmd/pi-otel")
	service := fmt.Sprintf("child-watch-%d", time.Now().UnixNano())
	cmd := exec.Command(bin, "watch", "--since", "all", "--settle", "100ms", "--flush-timeout", "5s",
		"--state", filepath.Join(t.TempDir(), "state.json"), filepath.Dir(parent), filepath.Dir(child))
	cmd.Env = append(os.Environ(), "PI_OTEL_SPOOL_DIR=none", "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+j.OTLPGRPC,
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_SERVICE_NAME="+service, "OTEL_METRICS_EXPORTER=none")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	j.WaitService(t, ctx, service, since, spans)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch: %v\n%s", err, stderr.String())
	}
	traces, err := j.FindTraces(ctx, service, since, time.Now().Add(time.Minute), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 {
		t.Fatalf("watch left %d traces, want the parent's only:\n%s", len(traces), stderr.String())
	}
	// The replay above wrote the same trace (the ids derive from the
	// file): count watch's spans only.
	agents, own := 0, 0
	for _, s := range traces[0].Spans {
		if s.Resource["service.name"] != service {
			continue
		}
		own++
		if s.Name == "invoke_agent scout" {
			agents++
		}
	}
	if agents != 1 || own != spans {
		t.Errorf("watch wrote %d invoke_agent scout spans and %d spans, want 1 and %d", agents, own, spans)
	}
}
