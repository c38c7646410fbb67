package toolctx

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// BenchmarkHookCost runs the same bash call with and without the hook, in
// turns, and reports the medians and the median of what the hook adds to
// one call (added-ms): the figure docs/configuration.md quotes. The hooked
// call finds its entry, the usual case; the 300-byte command makes the
// hook hash a full sample.
func BenchmarkHookCost(b *testing.B) {
	if _, err := exec.LookPath("bash"); err != nil {
		b.Skip("no bash")
	}
	r, err := Open(Options{Base: b.TempDir() + "/pi-otel", Wait: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	cmd := ": " + string(make([]byte, 0, 300))
	for len(cmd) < 300 {
		cmd += "x"
	}
	plainEnv := []string{"PATH=" + os.Getenv("PATH"), "TRACEPARENT=" + runLevel}
	hookEnv := append(append([]string{}, plainEnv...), r.Env(func(string) string { return "" })...)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled})
	run := func(env []string) time.Duration {
		c := exec.Command("bash", "-c", cmd)
		c.Env = env
		start := time.Now()
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var plain, hooked, added []float64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		id := itoa(i)
		r.Call(id, cmd, sc)
		p := run(plainEnv)
		h := run(hookEnv)
		r.Done(id)
		plain, hooked = append(plain, ms(p)), append(hooked, ms(h))
		added = append(added, ms(h)-ms(p))
	}
	b.ReportMetric(median(plain), "plain-ms")
	b.ReportMetric(median(hooked), "hooked-ms")
	b.ReportMetric(median(added), "added-ms")
	if m := r.Misses(); m.Total() > 0 {
		b.Errorf("misses %+v", m)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
