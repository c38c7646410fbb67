package app

import (
	"bytes"
	"io"
	"math"
	"runtime/debug"
	"testing"
)

func TestMemoryLimitIsSoftDefaultUnlessGOMEMLIMIT(t *testing.T) {
	before := debug.SetMemoryLimit(-1) // -1 reads without changing
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	applyMemoryLimit(0, getenv)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("limit 0 changed the runtime's limit to %d", got)
	}
	applyMemoryLimit(48<<20, getenv)
	if got := debug.SetMemoryLimit(-1); got != 48<<20 {
		t.Fatalf("limit = %d, want %d", got, 48<<20)
	}
	env["GOMEMLIMIT"] = "1GiB" // the runtime applied it at start; it wins
	applyMemoryLimit(16<<20, getenv)
	if got := debug.SetMemoryLimit(-1); got != 48<<20 {
		t.Fatalf("GOMEMLIMIT set, yet the limit moved to %d", got)
	}
	if OSEnv().MemoryLimit != defaultMemoryLimit || defaultMemoryLimit <= 0 {
		t.Fatal("the real process must run with the default soft limit")
	}
}

// --memory-limit wins over GOMEMLIMIT and the default; off lifts it.
func TestMemoryLimitFlag(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, c := range []struct {
		arg  string
		want int64
	}{{"24MiB", 24 << 20}, {"off", math.MaxInt64}} {
		var errb bytes.Buffer
		code := Main(t.Context(), Env{Args: []string{"demo", "--traces-exporter", "none", "--memory-limit", c.arg},
			Stdout: io.Discard, Stderr: &errb, MemoryLimit: 32 << 20,
			Getenv: func(k string) string { return map[string]string{"GOMEMLIMIT": "1GiB"}[k] }})
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if got := debug.SetMemoryLimit(-1); got != c.want {
			t.Errorf("--memory-limit %s: limit %d, want %d", c.arg, got, c.want)
		}
	}
}
