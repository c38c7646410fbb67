package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// Pi creates its session folder at its first message; pi-otel's lines
// come out once Pi has exited, so they must not say the folder is awaited
// ("does not exist yet; watching for it to be created"): by then Pi has
// created it, or is gone and will not. The session Pi wrote is traced.
func TestRunTUISaysNothingOfTheFolderBeforePi(t *testing.T) {
	session := repo.Path("testdata/sessions/pi-1.6.0/bash-tool.jsonl")
	for _, c := range []struct {
		name, script string
		made         bool // the folder is there before Pi starts
		traces       string
	}{
		// Pi is given its session file (--session), which makes the file
		// this Pi's (sessionwatch.Owner, rule 1) whenever the follower
		// looks and whatever other Pi runs on the machine meanwhile.
		{"writes a session", `mkdir -p "$3" && cat "$4" >"$2"`, false, "pi-otel: 1 trace"},
		{"writes nothing", `exit 0`, false, "pi-otel: 0 traces"},
		{"writes nothing in its folder", `exit 0`, true, "pi-otel: 0 traces"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "sessions")
			if c.made {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			// A Pi by name, so that run follows its session files.
			pi := filepath.Join(t.TempDir(), "pi")
			writeScript(t, pi, "#!/bin/sh\n"+c.script+"\n")
			var stderr strings.Builder
			code := Main(t.Context(), Env{
				Args:   []string{"run", "--traces-exporter", "none", "--", pi, "--session", filepath.Join(dir, "s.jsonl"), dir, session},
				Stdin:  strings.NewReader(""),
				Stdout: &strings.Builder{},
				Stderr: &stderr,
				Getenv: func(k string) string {
					return map[string]string{"PI_CODING_AGENT_SESSION_DIR": dir, "HOME": t.TempDir()}[k]
				},
			})
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr.String())
			}
			for _, l := range strings.Split(stderr.String(), "\n") {
				if strings.Contains(l, dir) {
					t.Errorf("a line about the session folder after Pi has gone: %q", l)
				}
			}
			if !strings.Contains(stderr.String(), c.traces) {
				t.Errorf("want %q:\n%s", c.traces, stderr.String())
			}
			if _, err := os.Stat(dir); !c.made && c.name == "writes nothing" && err == nil {
				t.Errorf("pi-otel created the session folder %s", dir)
			}
		})
	}
}

func writeScript(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}
