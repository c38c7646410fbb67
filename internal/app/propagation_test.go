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
