//go:build realstack

package pitest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// TestRealPi runs the real Pi against the fake model in json mode.
func TestRealPi(t *testing.T) {
	model := fakemodel.Start(t, fakemodel.WithScript(fakemodel.Text("pong", 2)))
	env := New(t, model.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := env.Run(env.Command(ctx, env.Args("--mode", "json", "--no-session", "ping")...))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, stderr:\n%s", res.ExitCode, res.Stderr)
	}
	lines := bytes.Split(bytes.TrimSpace(res.Stdout), []byte("\n"))
	var first, last struct{ Type string }
	if err := json.Unmarshal(lines[0], &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lines[len(lines)-1], &last); err != nil {
		t.Fatal(err)
	}
	if first.Type != "session" || last.Type != "agent_settled" {
		t.Errorf("stream runs %s..%s, want session..agent_settled", first.Type, last.Type)
	}
	if !bytes.Contains(res.Stdout, []byte(`"text":"pong"`)) {
		t.Errorf("stdout lacks the model's answer:\n%s", res.Stdout)
	}
	reqs := model.ChatRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	c, err := reqs[0].Chat()
	if err != nil {
		t.Fatal(err)
	}
	if c.Model != env.Model.ID || !bytes.Contains(reqs[0].Body, []byte("ping")) {
		t.Errorf("request for model %q without the prompt: %s", c.Model, reqs[0].Body)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer fake-key" {
		t.Errorf("authorization %q", got)
	}
}

func TestFiles(t *testing.T) {
	m := DefaultModel()
	m.Reasoning = true
	env, err := Prepare(t.TempDir(), "http://127.0.0.1:1/v1", WithPi("/bin/true"), WithNodeDir("/usr/bin"), WithModel(m),
		WithSettings(map[string]any{"retry": map[string]any{"maxRetries": 1}, "compaction": map[string]any{"keepRecentTokens": 10}}))
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		DefaultProvider string `json:"defaultProvider"`
		DefaultModel    string `json:"defaultModel"`
		Retry           struct {
			BaseDelayMs int `json:"baseDelayMs"`
			MaxRetries  int `json:"maxRetries"`
			Provider    struct {
				MaxRetries *int `json:"maxRetries"`
			} `json:"provider"`
		} `json:"retry"`
		Compaction map[string]int `json:"compaction"`
	}
	readJSON(t, filepath.Join(env.AgentDir, "settings.json"), &settings)
	if settings.DefaultProvider != Provider || settings.DefaultModel != m.ID {
		t.Errorf("defaults %+v", settings)
	}
	// Merged, not replaced: the default baseDelayMs and provider retries stay.
	if settings.Retry.BaseDelayMs != 50 || settings.Retry.MaxRetries != 1 || settings.Retry.Provider.MaxRetries == nil || *settings.Retry.Provider.MaxRetries != 0 {
		t.Errorf("retry %+v", settings.Retry)
	}
	if settings.Compaction["keepRecentTokens"] != 10 {
		t.Errorf("compaction %+v", settings.Compaction)
	}
	var models struct {
		Providers map[string]struct {
			BaseURL string `json:"baseUrl"`
			API     string `json:"api"`
			Models  []struct {
				ID            string  `json:"id"`
				Reasoning     bool    `json:"reasoning"`
				ContextWindow int     `json:"contextWindow"`
				Cost          Cost    `json:"cost"`
				MaxTokens     float64 `json:"maxTokens"`
			} `json:"models"`
		} `json:"providers"`
	}
	readJSON(t, filepath.Join(env.AgentDir, "models.json"), &models)
	p := models.Providers[Provider]
	if p.BaseURL != "http://127.0.0.1:1/v1" || p.API != "openai-completions" || len(p.Models) != 1 {
		t.Fatalf("provider %+v", p)
	}
	if got := p.Models[0]; got.ID != m.ID || !got.Reasoning || got.ContextWindow != m.ContextWindow || got.Cost != m.Cost {
		t.Errorf("model %+v", got)
	}

	envv := strings.Join(env.Environ(), "\n")
	for _, want := range []string{"HOME=" + env.Home, "PI_CODING_AGENT_DIR=" + env.AgentDir, "PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0", "TMPDIR=" + env.TmpDir, "PATH=/usr/bin:"} {
		if !strings.Contains(envv, want) {
			t.Errorf("environment lacks %q", want)
		}
	}
}

// TestKillAll checks that processes which left the process group (as Pi's
// bash tools do) are still killed.
func TestKillAll(t *testing.T) {
	env, err := Prepare(t.TempDir(), "http://127.0.0.1:1/v1", WithPi("/bin/true"), WithNodeDir("/usr/bin"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := env.Run(env.Wrap(ctx, "bash", "-c", "setsid sleep 300 >/dev/null 2>&1 & echo $!"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	if err != nil {
		t.Fatalf("pid %q: %v", res.Stdout, err)
	}
	defer func() {
		// Once reaped, its pid may be another process's.
		if alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	if !alive(pid) {
		t.Fatal("the detached sleep is not running")
	}
	env.KillAll()
	if !wait.Until(2*time.Second, func() bool { return !alive(pid) }) {
		t.Error("KillAll left the detached sleep running")
	}
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
