package app

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"

	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// gitRepo makes a repository named widget, on branch main, whose origin
// URL carries token.
func gitRepo(t *testing.T, token string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("this test needs git on PATH: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "widget")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", dir},
		{"-C", dir, "remote", "add", "origin", "https://ci:" + token + "@git.example.com/acme/widget.git"},
		{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "one"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// TestLiveRunAttribution: a live run in a git work tree whose remote URL
// carries a token: every span names the repository, branch and team, the
// resource the user, team, host and the Pi version, on traces and metrics
// alike, and the token appears nowhere.
func TestLiveRunAttribution(t *testing.T) {
	const token = "glpat-TopSecretToken123"
	capture := repo.Path("testdata/captures/pi-1.6.0/text.jsonl") // before the chdir
	t.Chdir(gitRepo(t, token))
	cli := fakePi(t, "1.6.0")
	if err := os.WriteFile(cli, []byte("#!/bin/sh\nexec cat "+capture+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	traces, metrics := filepath.Join(out, "t.jsonl"), filepath.Join(out, "m.jsonl")
	var stdout, stderr bytes.Buffer
	code := Main(t.Context(), Env{
		Args: []string{"run", "--traces-file", traces, "--metrics-file", metrics, "--team", "red", "--user", "alice",
			"--", cli, "--mode", "json", "hi"},
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" },
	})
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	forest := spantree.ReadOTLPFile(t, traces)
	spans := spantree.All(forest)
	if len(spans) < 3 {
		t.Fatalf("%d spans", len(spans))
	}
	for _, s := range spans {
		for k, want := range map[string]string{
			"vcs.repository.name": "widget", "vcs.ref.head.name": "main", "pi.team": "red",
			"vcs.repository.url.full": "https://git.example.com/acme/widget.git",
		} {
			if got := s.Str(k); got != want {
				t.Errorf("%s: %s = %q, want %q", s.Name, k, got, want)
			}
		}
		if len(s.Str("vcs.ref.head.revision")) != 40 {
			t.Errorf("%s: revision %q", s.Name, s.Str("vcs.ref.head.revision"))
		}
	}
	rawTraces, err := os.ReadFile(traces)
	if err != nil {
		t.Fatal(err)
	}
	rawMetrics, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{"traces": rawTraces, "metrics": rawMetrics} {
		if bytes.Contains(raw, []byte(token)) || bytes.Contains(raw, []byte("ci:")) {
			t.Errorf("%s carry the remote's credentials", name)
		}
	}
	treq, err := otlpjson.UnmarshalTraces(bytes.TrimSpace(rawTraces))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(rawMetrics), []byte("\n"))
	mreq, err := otlpjson.UnmarshalMetrics(lines[len(lines)-1])
	if err != nil {
		t.Fatal(err)
	}
	for signal, kvs := range map[string]map[string]string{
		"traces":  protoResource(treq.ResourceSpans[0].Resource.Attributes),
		"metrics": protoResource(mreq.ResourceMetrics[0].Resource.Attributes),
	} {
		host, _ := os.Hostname()
		for k, want := range map[string]string{"pi.version": "1.6.0", "pi.team": "red", "enduser.id": "alice", "host.name": host} {
			if kvs[k] != want {
				t.Errorf("%s resource: %s = %q, want %q", signal, k, kvs[k], want)
			}
		}
	}
	// The cost is labelled with the team and the repository.
	if !bytes.Contains(rawMetrics, []byte(`"key":"vcs.repository.name","value":{"stringValue":"widget"}`)) {
		t.Error("no metric point labelled with the repository")
	}
}

func protoResource(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = kv.Value.GetStringValue()
	}
	return out
}
