//go:build realstack

package e2e

// Soak: long runs that show pi-otel's memory stays flat and nothing leaks.
// Durations and counts are short by default, for the test suite; the full
// runs reported in docs/reliability.md set them through the environment:
//
//	PI_OTEL_SOAK=1h PI_OTEL_SOAK_PROMPTS=10000 go test -tags realstack ./test/e2e -run Soak -v -timeout 3h

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// soakDuration is how long TestSoakReplay streams: $PI_OTEL_SOAK, 20s by
// default.
func soakDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("PI_OTEL_SOAK")
	if v == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("PI_OTEL_SOAK=%q: %v", v, err)
	}
	return d
}

// soakCount reads a count from the environment, def when unset.
func soakCount(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

// soakSample is one reading of a process's resident memory.
type soakSample struct {
	at time.Duration
	kb int64
}

// soakSampleRSS reads VmRSS of pid every interval until stop is closed.
func soakSampleRSS(pid int, interval time.Duration, stop <-chan struct{}) <-chan []soakSample {
	out := make(chan []soakSample, 1)
	go func() {
		var s []soakSample
		start := time.Now()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			if kb, ok := soakRSS(pid); ok {
				s = append(s, soakSample{time.Since(start), kb})
			}
			select {
			case <-stop:
				out <- s
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

func soakRSS(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb, err == nil
		}
	}
	return 0, false
}

func soakCurve(s []soakSample) string {
	unit := time.Second
	if len(s) > 0 && s[len(s)-1].at < time.Minute {
		unit = 100 * time.Millisecond
	}
	// At most about 30 points, the last one always shown.
	step := max(1, len(s)/30)
	var parts []string
	for i, x := range s {
		if i%step == 0 || i == len(s)-1 {
			parts = append(parts, fmt.Sprintf("%v %.1fMB", x.at.Round(unit), float64(x.kb)/1024))
		}
	}
	return strings.Join(parts, ", ")
}

// flat fails the test if the memory of the last third of the samples
// exceeds the peak of the first third by more than a quarter and 16 MB:
// growth with the amount of data, not a warm-up, is a leak.
func soakFlat(t *testing.T, what string, s []soakSample) {
	t.Helper()
	if len(s) < 6 {
		t.Fatalf("%s: only %d memory samples", what, len(s))
	}
	n := len(s) / 3
	var early, late int64
	for _, x := range s[:n] {
		early = max(early, x.kb)
	}
	for _, x := range s[len(s)-n:] {
		late = max(late, x.kb)
	}
	if late > early+early/4+16<<10 {
		t.Errorf("%s grows: peak %.1f MB in the first third, %.1f MB in the last: %s",
			what, float64(early)/1024, float64(late)/1024, soakCurve(s))
	}
}

// soakChecker compares a stream, as it comes, with pattern repeated.
type soakChecker struct {
	pattern  []byte
	off      int
	total    int64
	mismatch int64 // first differing byte + 1, 0 when none
}

func (c *soakChecker) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		n := min(len(p), len(c.pattern)-c.off)
		if c.mismatch == 0 && !bytes.Equal(p[:n], c.pattern[c.off:c.off+n]) {
			i := 0
			for p[i] == c.pattern[c.off+i] {
				i++
			}
			c.mismatch = c.total + int64(i) + 1
		}
		c.total += int64(n)
		c.off = (c.off + n) % len(c.pattern)
		p = p[n:]
	}
	return written, nil
}

// TestSoakReplay streams the real Pi 1.6.0 captures (every one of them,
// the runs cut short by signals included) through `pi-otel run` over and
// over, as fast as pi-otel takes them, for $PI_OTEL_SOAK (20s by default),
// exporting to a local OTLP collector. Every byte comes through in order,
// every span is counted and delivered or reported, and pi-otel's resident
// memory, sampled from /proc, stays flat.
func TestSoakReplay(t *testing.T) {
	t.Parallel()
	dur := soakDuration(t)
	dir := t.TempDir()
	set := faultCaptures(t, false)
	setFile := filepath.Join(dir, "set.jsonl")
	twice := filepath.Join(dir, "twice.jsonl")
	if err := os.WriteFile(setFile, set, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(twice, append(bytes.Clone(set), set...), 0o644); err != nil {
		t.Fatal(err)
	}
	// What one more pass over the captures adds: the first pass starts
	// from nothing, later ones after the last capture.
	one := faultCat(t, nil, setFile, len(set), "--traces-exporter", "none")
	two := faultCat(t, nil, twice, 2*len(set), "--traces-exporter", "none")
	spansPerPass := two.sum.Spans - one.sum.Spans

	col := startFaultCollector(t, 0)
	script := fmt.Sprintf(`end=$(( $(date +%%s) + %d )); while [ "$(date +%%s)" -lt "$end" ]; do cat %s; done`,
		int(dur.Seconds()), setFile)
	ctx, cancel := context.WithTimeout(context.Background(), dur+5*time.Minute)
	defer cancel()
	cmd := soakPiOtel(ctx, faultOTLP(col.addr, "soak"), "run", "--", "sh", "-c", script)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	check := &soakChecker{pattern: set}
	cmd.Stdout = check
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	samples := soakSampleRSS(cmd.Process.Pid, max(time.Second, dur/300), stop)
	err := cmd.Wait()
	close(stop)
	rss := <-samples
	if err != nil || ctx.Err() != nil {
		t.Fatalf("pi-otel: %v\n%s", err, errb.Bytes())
	}
	passes := check.total / int64(len(set))
	if check.mismatch != 0 || check.total%int64(len(set)) != 0 {
		t.Fatalf("stdout differs from the captures at byte %d of %d", check.mismatch-1, check.total)
	}
	sum, ok := parseFaultSummary(errb.Bytes())
	if !ok {
		t.Fatalf("no summary:\n%s", errb.Bytes())
	}
	if want := one.sum.Spans + int(passes-1)*spansPerPass; sum.Spans != want {
		t.Errorf("%d spans for %d passes, want %d", sum.Spans, passes, want)
	}
	got := col.spans()
	if got+sum.dropped+sum.failed != sum.Spans {
		t.Errorf("collector got %d spans; %s", got, sum.Line)
	}
	soakFlat(t, "pi-otel's RSS", rss)
	t.Logf("%v: %d passes over %d captures, %.0f MB through (%.0f MB/s); %s; collector got %d spans",
		dur, passes, bytes.Count(set, []byte(`{"type":"session"`)), float64(check.total)/1e6,
		float64(check.total)/1e6/dur.Seconds(), sum.Line, got)
	t.Logf("pi-otel RSS: %s", soakCurve(rss))
}

// soakPiOtel is pi-otel with the test's environment minus OTEL_* plus env.
func soakPiOtel(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, piOtelBin, args...)
	cmd.Env = append(scrubbed(os.Environ()), env...)
	return cmd
}

// TestSoakGoroutines runs pi-otel's commands in this process, again and
// again, and counts goroutines before and after: none may be left behind
// (exporters, signal forwarding, the child's reaper, the proxy's pumps).
// It must not run in parallel with other tests of this process.
func TestSoakGoroutines(t *testing.T) {
	dir := t.TempDir()
	set := faultCaptures(t, false)
	setFile := filepath.Join(dir, "set.jsonl")
	if err := os.WriteFile(setFile, set, 0o644); err != nil {
		t.Fatal(err)
	}
	rpcIn := repo.Captures("pi-1.6.0", "rpc-bash.out.jsonl")
	col := startFaultCollector(t, 0)
	vars := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + col.addr,
		"OTEL_SERVICE_NAME":           "soak-goroutines",
		"OTEL_METRICS_EXPORTER":       "otlp",
		"OTEL_BSP_SCHEDULE_DELAY":     "10",
	}
	main := func(args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := app.Main(t.Context(), app.Env{Args: args, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Getenv: func(k string) string { return vars[k] }})
		if code != 0 {
			t.Fatalf("pi-otel %v exited %d:\n%s", args, code, errb.Bytes())
		}
		if args[0] == "run" && !bytes.Equal(out.Bytes(), set) {
			t.Fatalf("pi-otel %v: stdout is not the captures", args)
		}
	}
	all := func() {
		main("run", "--", "cat", setFile)
		main("replay", setFile)
		// The proxy with a child that ignores its stdin and writes a
		// recorded RPC session.
		main("rpc", "--", "cat", rpcIn)
	}
	all() // warm-up: the SDKs start what they keep for the process's life
	before := runtime.NumGoroutine()
	const rounds = 5
	for range rounds {
		all()
	}
	after := runtime.NumGoroutine()
	wait.Until(10*time.Second, func() bool { after = runtime.NumGoroutine(); return after <= before })
	if after > before {
		var dump bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Errorf("%d goroutines before %d rounds, %d after:\n%s", before, rounds, after, dump.Bytes())
	}
	t.Logf("goroutines: %d before %d rounds of run, replay and rpc, %d after; collector got %d spans",
		before, rounds, after, col.spans())
}

// soakSpans counts started and ended spans.
type soakSpans struct{ started, ended atomic.Int64 }

func (c *soakSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) { c.started.Add(1) }
func (c *soakSpans) OnEnd(sdktrace.ReadOnlySpan)                     { c.ended.Add(1) }
func (c *soakSpans) Shutdown(context.Context) error                  { return nil }
func (c *soakSpans) ForceFlush(context.Context) error                { return nil }

// TestSoakRPCTracker plays every recorded RPC transcript through one
// rpc.Tracker, over and over, until $PI_OTEL_SOAK_TRACKER_PROMPTS prompts
// (10,000 by default) have gone by, as one very long proxy session would.
// The live heap stays flat, every span started is ended, and no goroutine
// is left.
func TestSoakRPCTracker(t *testing.T) {
	target := soakCount(t, "PI_OTEL_SOAK_TRACKER_PROMPTS", 10000)
	files, err := filepath.Glob(repo.Path("internal/rpc/testdata/transcripts/*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	var lines []rpctest.Line
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		ls, err := rpctest.ReadTranscript(fh, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
		fh.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		lines = append(lines, ls...)
	}
	before := runtime.NumGoroutine()
	var c soakSpans
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(&c))
	tr := rpc.New(agentmap.New(tp), tp)
	var heap []soakSample
	var ms runtime.MemStats
	start := time.Now()
	prompts, records := 0, 0
	offset := time.Duration(0)
	next := 0
	for prompts < target {
		var last time.Time
		for _, l := range lines {
			at := l.At.Add(offset)
			last = at
			raw := bytes.TrimSuffix(l.Raw, []byte{'\r'})
			if l.Dir == rpctest.In {
				tr.FromController(raw, at)
				if l.Type() == "prompt" {
					prompts++
				}
			} else {
				tr.FromPi(raw, at)
			}
			records++
		}
		offset = last.Sub(lines[0].At) + time.Second
		if prompts >= next {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			heap = append(heap, soakSample{time.Since(start), int64(ms.HeapAlloc) / 1024})
			next += target / 30
		}
	}
	tr.Close(agentmap.Ending{Reason: vocab.EndExit}, time.Now())
	_ = tp.Shutdown(context.Background())
	if c.started.Load() != c.ended.Load() {
		t.Errorf("%d spans started, %d ended", c.started.Load(), c.ended.Load())
	}
	soakFlat(t, "the live heap", heap)
	after := runtime.NumGoroutine()
	wait.Until(5*time.Second, func() bool { after = runtime.NumGoroutine(); return after <= before })
	if after > before {
		t.Errorf("goroutines: %d before, %d after", before, after)
	}
	st := tr.Stats()
	t.Logf("%d prompts, %d records in %v (%.0f records/s), %d spans; tracker stats %+v; goroutines %d → %d",
		prompts, records, time.Since(start).Round(time.Millisecond), float64(records)/time.Since(start).Seconds(),
		c.ended.Load(), st, before, after)
	t.Logf("live heap: %s", soakCurve(heap))
}

// TestSoakRPCPi drives the real Pi in RPC mode through `pi-otel rpc`:
// $PI_OTEL_SOAK_PROMPTS prompts (100 by default) in one session, each
// waited for to agent_settled, with a small context window so that Pi
// compacts now and then. Every prompt is answered, every run is a trace,
// every span is delivered or reported, and pi-otel's memory stays flat.
func TestSoakRPCPi(t *testing.T) {
	t.Parallel()
	n := soakCount(t, "PI_OTEL_SOAK_PROMPTS", 100)
	model := fakemodel.Start(t,
		fakemodel.WithSummaries("Summary: earlier prompts, compacted.", 2),
		fakemodel.WithRoute(func(fakemodel.Request) bool { return true },
			func(fakemodel.Request) fakemodel.Response { return fakemodel.Text("Done, next please.", 3) }),
	)
	m := pitest.DefaultModel()
	m.ContextWindow, m.MaxTokens = 8000, 1024
	pi := pitest.New(t, model.URL(), pitest.WithModel(m),
		pitest.WithSettings(map[string]any{"compaction": map[string]any{"reserveTokens": 2000, "keepRecentTokens": 200}}))
	col := startFaultCollector(t, 0)

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(n)*time.Second+5*time.Minute)
	defer cancel()
	cmd := pi.Wrap(ctx, piOtelBin, append([]string{"rpc", "--", pi.Pi}, pi.Args("--mode", "rpc", "--no-session")...)...)
	cmd.Env = append(scrubbed(cmd.Env), faultOTLP(col.addr, "soak-rpc")...)
	var errb proc.Buffer
	cmd.Stderr = &errb
	pipes := proc.StartPiped(t, cmd, proc.Stdin|proc.Stdout)
	stdin, stdout := pipes.Stdin, pipes.Stdout
	pi.Track(cmd)
	stop := make(chan struct{})
	samples := soakSampleRSS(cmd.Process.Pid, 100*time.Millisecond, stop)

	br := bufio.NewReaderSize(stdout, 1<<20)
	start := time.Now()
	var lines, bytesOut, compactions int64
	for i := range n {
		if _, err := fmt.Fprintf(stdin, `{"id":"p%d","type":"prompt","message":"Prompt number %d, please answer."}`+"\n", i, i); err != nil {
			t.Fatalf("prompt %d: %v\n%s", i, err, errb.String())
		}
		answered := false
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				t.Fatalf("prompt %d: reading: %v\n%s", i, err, errb.String())
			}
			lines++
			bytesOut += int64(len(line))
			switch {
			case bytes.HasPrefix(line, []byte(fmt.Sprintf(`{"id":"p%d","type":"response","command":"prompt","success":true`, i))):
				answered = true
			case bytes.HasPrefix(line, []byte(`{"type":"compaction_start"`)):
				compactions++
			}
			if bytes.HasPrefix(line, []byte(`{"type":"agent_settled"`)) {
				break
			}
		}
		if !answered {
			t.Fatalf("prompt %d settled without a successful response", i)
		}
	}
	elapsed := time.Since(start)
	_ = stdin.Close()
	rest, _ := io.Copy(io.Discard, br)
	err := cmd.Wait()
	close(stop)
	rss := <-samples
	if err != nil {
		t.Fatalf("pi-otel: %v\n%s", err, errb.String())
	}
	sum, ok := parseFaultSummary([]byte(errb.String()))
	if !ok {
		t.Fatalf("no summary:\n%s", errb.String())
	}
	if sum.Traces != n {
		t.Errorf("%d traces for %d prompts: %s", sum.Traces, n, sum.Line)
	}
	got := col.spans()
	if got+sum.dropped+sum.failed != sum.Spans {
		t.Errorf("collector got %d spans; %s", got, sum.Line)
	}
	soakFlat(t, "pi-otel's RSS", rss)
	t.Logf("%d prompts in %v (%.1f prompts/s), %d compactions, %d records (%.1f MB) out, %d after the last; %s; collector got %d",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), compactions, lines, float64(bytesOut)/1e6, rest, sum.Line, got)
	t.Logf("pi-otel RSS: %s", soakCurve(rss))
}
