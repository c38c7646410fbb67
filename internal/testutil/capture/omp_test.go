//go:build realstack

package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
)

// ompVersion is the oh-my-pi release the captures in
// testdata/sessions/omp-VERSION come from (npm @oh-my-pi/pi-coding-agent,
// run by Bun 1.4.5; 18.3.4 does not install from the registry here).
const ompVersion = "18.2.3"

// TestOhMyPiCapture records oh-my-pi, Pi's fork, against the fake model:
// its json stream and the session file of the same run, as the Pi
// session captures are kept. PI_OTEL_OMP names its CLI (node_modules/.bin/omp
// of `npm install @oh-my-pi/pi-coding-agent@18.2.3 bun@1.4.5`); without it,
// or without -update, the committed captures are only checked.
func TestOhMyPiCapture(t *testing.T) {
	dir := filepath.Join(*sessionsDir, "omp-"+ompVersion)
	omp := os.Getenv("PI_OTEL_OMP")
	if *update && omp != "" {
		recordOhMyPi(t, omp, dir, "bash-tool", "Run echo hello, then say done",
			fakemodel.Tools(fakemodel.Bash("call_omp_1", "echo hello")),
			fakemodel.Text("The command printed hello. Done.", 3))
	}
	for _, name := range []string{"bash-tool"} {
		file, err := os.ReadFile(filepath.Join(dir, name+".jsonl"))
		if err != nil {
			t.Fatalf("no capture (run with PI_OTEL_OMP=... -update): %v", err)
		}
		first, _, _ := bytes.Cut(file, []byte("\n"))
		if !bytes.HasPrefix(first, []byte(`{"type":"title"`)) {
			t.Errorf("%s: the session file does not start with oh-my-pi's title line: %.80s", name, first)
		}
		stream, err := os.ReadFile(filepath.Join(dir, name+".stream.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(stream, []byte(`"isTerminal":true`)) || bytes.Contains(stream, []byte(`"agent_settled"`)) {
			t.Errorf("%s: the stream does not end at agent_end with isTerminal, without agent_settled", name)
		}
	}
}

// recordOhMyPi runs omp -p --mode json once against a scripted fake model,
// hermetically (its own home and agent folder, no title call), and keeps
// its stdout and the session file it wrote.
func recordOhMyPi(t *testing.T, omp, dir, name, prompt string, script ...fakemodel.Response) {
	t.Helper()
	model := fakemodel.Start(t, fakemodel.WithScript(script...))
	home := t.TempDir()
	agent := filepath.Join(home, "agent")
	proj := filepath.Join(home, "proj")
	for _, d := range []string{agent, proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	models := fmt.Sprintf(`providers:
  fakellm:
    baseUrl: %s
    apiKey: fake-key
    api: openai-completions
    models:
      - {id: fake-model, name: Fake Model, reasoning: false, input: [text], contextWindow: 128000,
         maxTokens: 4096, cost: {input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75}}
`, model.URL())
	if err := os.WriteFile(filepath.Join(agent, "models.yml"), []byte(models), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, omp, "-p", "--mode", "json", "--model", "fakellm/fake-model", prompt)
	cmd.Dir = proj
	cmd.Env = append(os.Environ(), "HOME="+home, "PI_CODING_AGENT_DIR="+agent, "PI_NO_TITLE=1",
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"))
	// Bun is installed beside omp.
	cmd.Env = append(cmd.Env, "PATH="+filepath.Dir(omp)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		t.Fatalf("omp: %v\n%s", err, stderr.String())
	}
	var files []string
	_ = filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") && strings.Contains(p, "sessions") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != 1 {
		t.Fatalf("%d session files under %s: %q\n%s", len(files), home, files, stderr.String())
	}
	file, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{
		"scenario": name, "description": prompt, "ompVersion": ompVersion, "mode": "json",
		"args": cmd.Args[1:], "sessionPath": strings.TrimPrefix(files[0], home), "modelRequests": len(model.ChatRequests()),
		"stderr": stderr.String(),
	}
	mb, _ := json.MarshalIndent(meta, "", "  ")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, b := range map[string][]byte{name + ".jsonl": file, name + ".stream.jsonl": stdout.Bytes(), name + ".meta.json": append(mb, '\n')} {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
