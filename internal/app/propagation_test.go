package app_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/app"
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
			code := app.Main(app.Env{
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
