//go:build realstack

package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
)

// The real Pi 1.6.0 writes a session file (a 529 retry, a working and a
// failing tool, two prompts); the real pi-otel replay traces it into a
// real Jaeger, which holds one trace per prompt with the ids the file
// determines. A second replay adds no trace.
func TestSessionFileIntoJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	model := fakemodel.Start(t, fakemodel.WithScript(
		fakemodel.Overloaded(),
		fakemodel.Tools(fakemodel.Bash("call_ok", "echo ok"), fakemodel.Call("call_missing", "read", map[string]any{"path": "nope.txt"})),
		fakemodel.Text("One worked, one failed.", 2),
		fakemodel.Text("Second answer.", 2),
	))
	env := pitest.New(t, model.URL())
	since := time.Now().Add(-time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := env.Run(env.Command(ctx, env.Args("--mode", "json", "--session-dir", env.SessionDir, "Run two tools", "Then answer again")...))
	if err != nil {
		t.Fatalf("pi: %v\n%s", err, res.Stderr)
	}
	files, _ := filepath.Glob(filepath.Join(env.SessionDir, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("%d session files", len(files))
	}
	file := files[0]
	sessionID, firstUser := ids(t, file)

	service := fmt.Sprintf("session-e2e-%d", time.Now().UnixNano())
	replay := func() string {
		var stderr bytes.Buffer
		vars := map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.OTLPGRPC,
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_SERVICE_NAME":           service,
			"OTEL_METRICS_EXPORTER":       "none",
		}
		code := app.Main(t.Context(), app.Env{Args: []string{"replay", file}, Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(k string) string { return vars[k] }})
		if code != 0 {
			t.Fatalf("replay exited %d: %s", code, stderr.String())
		}
		return stderr.String()
	}
	summary := replay()
	m := regexp.MustCompile(`(\d+) traces?.*?(\d+) spans`).FindStringSubmatch(summary)
	if m == nil || m[1] != "2" {
		t.Fatalf("summary %q, want 2 traces", summary)
	}
	var spans int
	fmt.Sscan(m[2], &spans)
	traces := j.WaitService(t, ctx, service, since, spans)
	if len(traces) != 2 {
		t.Fatalf("Jaeger holds %d traces", len(traces))
	}
	want := spanid.TraceID(sessionID + "/" + firstUser).String()
	var first *jaegertest.Trace
	for _, tr := range traces {
		if tr.ID == want {
			first = tr
		}
	}
	if first == nil {
		t.Fatalf("no trace %s (derived from the session and entry ids) among %s, %s", want, traces[0].ID, traces[1].ID)
	}
	root := first.Roots()
	if len(root) != 1 || root[0].Name != "invoke_agent pi" {
		t.Fatalf("roots %v", root)
	}
	r := root[0]
	if r.Str("gen_ai.conversation.id") != sessionID || r.Str("pi.outcome") != "ok" || r.Str("pi.project") != "work" {
		t.Errorf("root attributes %v", r.Attrs)
	}
	if n, _ := r.Int("pi.retries"); n != 1 {
		t.Errorf("pi.retries %d", n)
	}
	if n, _ := r.Int("pi.tool_errors"); n != 1 {
		t.Errorf("pi.tool_errors %d", n)
	}
	if len(first.Named("execute_tool read")) != 1 || len(first.Named("execute_tool bash")) != 1 || len(first.Named("pi.retry")) != 1 {
		var names []string
		for _, s := range first.Spans {
			names = append(names, s.Name)
		}
		t.Errorf("spans %v", names)
	}
	// The same file again: the same ids, so still two traces.
	replay()
	// Jaeger keeps both copies of each span, under the same two trace ids.
	again := j.WaitService(t, ctx, service, since, 2*spans)
	if len(again) != 2 {
		t.Errorf("after a second replay Jaeger holds %d traces, want the same 2", len(again))
	}
}

// ids reads the session id and the first user message's entry id.
func ids(t *testing.T, file string) (sessionID, firstUser string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Message struct {
				Role string `json:"role"`
			} `json:"message"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		if e.Type == "session" {
			sessionID = e.ID
		}
		if e.Type == "message" && e.Message.Role == "user" && firstUser == "" {
			firstUser = e.ID
		}
	}
	if sessionID == "" || firstUser == "" {
		t.Fatalf("no session id or user entry in %s", file)
	}
	return sessionID, firstUser
}

// The corpus files the real Pi wrote with an extension injecting messages
// around each prompt (testdata/corpus) go through the real pi-otel replay
// into a real Jaeger: one settled trace per prompt, four for each.
func TestInjectCorpusIntoJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, v := range []string{"1.6.0", "0.73"} {
		file := filepath.Join("testdata", "corpus", "inject-"+v+".jsonl")
		sessionID, _ := ids(t, file)
		service := fmt.Sprintf("corpus-%s-%d", v, time.Now().UnixNano())
		var stderr bytes.Buffer
		vars := map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.OTLPGRPC,
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_SERVICE_NAME":           service,
			"OTEL_METRICS_EXPORTER":       "none",
		}
		if code := app.Main(t.Context(), app.Env{Args: []string{"replay", file}, Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(k string) string { return vars[k] }}); code != 0 {
			t.Fatalf("%s: replay exited %d: %s", v, code, stderr.String())
		}
		m := regexp.MustCompile(`(\d+) traces?.*?(\d+) spans`).FindStringSubmatch(stderr.String())
		if m == nil || m[1] != "4" {
			t.Fatalf("%s: summary %q, want 4 traces", v, stderr.String())
		}
		var spans int
		fmt.Sscan(m[2], &spans)
		// The spans carry the file's own times, whatever day this runs
		// on; the service name alone picks them out.
		traces := j.WaitService(t, ctx, service, time.Unix(0, 0), spans)
		if len(traces) != 4 {
			t.Fatalf("%s: Jaeger holds %d traces, want 4", v, len(traces))
		}
		tools := 0
		for _, tr := range traces {
			roots := tr.Roots()
			if len(roots) != 1 || roots[0].Str("pi.outcome") != "ok" || roots[0].Str("gen_ai.conversation.id") != sessionID {
				t.Errorf("%s: roots %v", v, roots)
			}
			tools += len(tr.Named("execute_tool bash"))
		}
		if tools != 1 {
			t.Errorf("%s: %d bash tool spans, want 1", v, tools)
		}
	}
}
