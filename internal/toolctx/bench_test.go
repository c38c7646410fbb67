package toolctx

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// BenchmarkHookCost runs the same bash call with and without the hook, in
// turns, and reports the medians and what the hook adds to one call (hooked
// minus plain, run in turns) at the median and at the 99th percentile (added-ms, added-p99-ms): the
// figures docs/configuration.md quotes. The cases:
//
//   - call: a tool call under pi-otel run, which finds its entry;
//   - no-call: a bash that no call waits for under pi-otel run (a !
//     command, an extension's bash, a git hook), which asks pi-otel; Pi's
//     stdout is a real pipe read through Stream, as run reads it;
//   - unfollowed: the setup line, a session watch does not follow, which
//     asks watch and is answered at once;
//   - no-session: the setup line under pi --no-session, which asks
//     nothing.
func BenchmarkHookCost(b *testing.B) {
	if _, err := exec.LookPath("bash"); err != nil {
		b.Skip("no bash")
	}
	cmd := ": " + string(make([]byte, 0, 300))
	for len(cmd) < 300 {
		cmd += "x"
	}
	plainEnv := []string{"PATH=" + os.Getenv("PATH"), "TRACEPARENT=" + runLevel}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})

	b.Run("call", func(b *testing.B) {
		r := benchRun(b)
		env := append(slices.Clone(plainEnv), r.Env(func(string) string { return "" })...)
		i := 0
		measure(b, cmd, plainEnv, env, func() { i++; r.Call(itoa(i), cmd, sc) }, func() { r.Done(itoa(i)) })
		if m := r.Close(); m.Total() > 0 {
			b.Errorf("misses %+v", m)
		}
	})
	b.Run("no-call", func(b *testing.B) {
		r := benchRun(b)
		pr, pw, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		defer pw.Close()
		st, err := NewStream(pr)
		if err != nil {
			b.Fatal(err)
		}
		go func() { _, _ = io.Copy(io.Discard, st) }()
		r.SetSync(st.Sync)
		env := append(slices.Clone(plainEnv), r.Env(func(string) string { return "" })...)
		measure(b, cmd, plainEnv, env, nil, nil)
		if m := r.Close(); m.Total() > 0 {
			b.Errorf("misses %+v", m)
		}
		pr.Close()
	})
	for _, tc := range []struct {
		name string
		file bool
	}{{"unfollowed", true}, {"no-session", false}} {
		b.Run(tc.name, func(b *testing.B) {
			base := filepath.Join(b.TempDir(), "pi-otel")
			hookPath := filepath.Join(b.TempDir(), HookName)
			// Not followed: watch answers at once (app's fileProgress).
			s, err := OpenSessions(Options{Base: base, Wait: time.Second}, hookPath)
			if err != nil {
				b.Fatal(err)
			}
			s.SetSync(atOnce)
			defer s.Close()
			prefix := ". " + hookPath + " 2>/dev/null || :\n"
			env := append(slices.Clone(plainEnv), "PI_OTEL_PROPAGATION_DIR="+base, "PI_SESSION_ID=0198a2b4-4444-7000-8000-000000000004")
			if tc.file {
				env = append(env, "PI_SESSION_FILE=/elsewhere/s.jsonl")
			}
			// Against a plain bash -c of the command: no setup line.
			measure2(b, cmd, prefix+cmd, plainEnv, env, nil, nil)
		})
	}
}

func benchRun(b *testing.B) *Run {
	b.Helper()
	r, err := Open(Options{Base: filepath.Join(b.TempDir(), "pi-otel"), Wait: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	r.SetSync(atOnce)
	return r
}

// measure runs command under plain and hooked in turns, with before and
// after around each hooked run, and reports the figures.
func measure(b *testing.B, command string, plain, hooked []string, before, after func()) {
	b.Helper()
	measure2(b, command, command, plain, hooked, before, after)
}

// measure2 is measure with a command of its own for the hooked run.
func measure2(b *testing.B, plainCmd, hookedCmd string, plain, hooked []string, before, after func()) {
	b.Helper()
	run := func(command string, env []string) float64 {
		c := exec.Command("bash", "-c", command)
		c.Env = env
		start := time.Now()
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		return ms(time.Since(start))
	}
	var p, h, added []float64
	b.ResetTimer()
	for b.Loop() {
		if before != nil {
			before()
		}
		pt := run(plainCmd, plain)
		ht := run(hookedCmd, hooked)
		if after != nil {
			after()
		}
		p, h, added = append(p, pt), append(h, ht), append(added, ht-pt)
	}
	b.ReportMetric(quantile(p, 0.5), "plain-ms")
	b.ReportMetric(quantile(h, 0.5), "hooked-ms")
	b.ReportMetric(quantile(added, 0.5), "added-ms")
	b.ReportMetric(quantile(added, 0.99), "added-p99-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
