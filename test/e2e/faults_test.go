//go:build realstack

package e2e

// Faults: what pi-otel does when the collector, Pi, pi-otel itself or the
// consumer of its stdout misbehaves. Each test shows that no byte of Pi's
// output is lost, Pi is not held up, and every span is either delivered or
// counted as dropped. docs/reliability.md reports the figures these tests
// log (run with -v).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/capture"
	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
	"github.com/pi-otel/pi-otel/internal/testutil/otlptest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// faultPoll bounds every wait in these tests: a guard against a hang, not a
// performance assertion.
const faultPoll = 90 * time.Second

// faultRun is a pi-otel running in the background. It keeps every stdout
// record with its arrival time and all of stderr, and wakes waiters on
// each.
type faultRun struct {
	t     *testing.T
	cmd   *exec.Cmd
	start time.Time

	mu       sync.Mutex
	stdout   bytes.Buffer
	recs     []faultRecord
	stderr   bytes.Buffer
	changed  chan struct{} // closed and replaced on every change
	exitedAt time.Time
	done     chan struct{}
}

type faultRecord struct {
	at  time.Time
	typ string
}

// faultStart starts pi-otel with args in Pi's hermetic environment plus env.
func faultStart(t *testing.T, pi *pitest.Env, env []string, args ...string) *faultRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cmd := pi.Wrap(ctx, piOtelBin, args...)
	cmd.Env = append(scrubbed(cmd.Env), env...)
	r := &faultRun{t: t, cmd: cmd, changed: make(chan struct{}), done: make(chan struct{})}
	cmd.Stderr = (*faultStderr)(r)
	r.start = time.Now()
	out := proc.StartPiped(t, cmd, proc.Stdout).Stdout
	pi.Track(cmd)
	go func() {
		br := bufio.NewReaderSize(out, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			now := time.Now()
			r.mu.Lock()
			r.stdout.Write(line)
			if len(line) > 0 {
				var rec struct{ Type string }
				if json.Unmarshal(line, &rec) == nil {
					r.recs = append(r.recs, faultRecord{at: now, typ: rec.Type})
				}
			}
			r.wake()
			r.mu.Unlock()
			if err != nil {
				break
			}
		}
		_ = cmd.Wait()
		r.mu.Lock()
		r.exitedAt = time.Now()
		r.wake()
		r.mu.Unlock()
		close(r.done)
	}()
	return r
}

// wake must be called with mu held.
func (r *faultRun) wake() {
	close(r.changed)
	r.changed = make(chan struct{})
}

type faultStderr faultRun

func (w *faultStderr) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stderr.Write(p)
	(*faultRun)(w).wake()
	return len(p), nil
}

// waitFor polls cond (called with mu held) on every change, failing the
// test after faultPoll.
func (r *faultRun) waitFor(what string, cond func() bool) {
	r.t.Helper()
	deadline := time.NewTimer(faultPoll)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ok := cond()
		ch := r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			r.mu.Lock()
			defer r.mu.Unlock()
			r.t.Fatalf("waited %v for %s\nstderr:\n%s", faultPoll, what, r.stderr.Bytes())
		}
	}
}

// waitRecord waits for the n-th (1-based) record of type typ and returns
// its arrival time.
func (r *faultRun) waitRecord(typ string, n int) time.Time {
	r.t.Helper()
	var at time.Time
	r.waitFor(fmt.Sprintf("record #%d of type %s", n, typ), func() bool {
		seen := 0
		for _, rec := range r.recs {
			if rec.typ == typ {
				if seen++; seen == n {
					at = rec.at
					return true
				}
			}
		}
		return false
	})
	return at
}

// waitStderr waits until stderr holds sub.
func (r *faultRun) waitStderr(sub string) {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("%q on stderr", sub), func() bool { return bytes.Contains(r.stderr.Bytes(), []byte(sub)) })
}

// faultResult is a finished faultRun.
type faultResult struct {
	code     int
	signaled bool
	stdout   []byte
	stderr   []byte
	recs     []faultRecord
	exited   time.Time
	start    time.Time
	sum      faultSummary
}

// faultSummary is pi-otel's exit line, with its trouble counts.
type faultSummary struct {
	summaryline.Summary
	failed, dropped, pending int
}

var (
	faultFailedRE  = regexp.MustCompile(`; .*?(\d+) failed to export`)
	faultDroppedRE = regexp.MustCompile(`; .*?(\d+) spans? dropped`)
	faultPendingRE = regexp.MustCompile(`; .*?(\d+) pending`)
)

func parseFaultSummary(stderr []byte) (faultSummary, bool) {
	s, ok := summaryline.Parse(stderr)
	if !ok {
		return faultSummary{}, false
	}
	fs := faultSummary{Summary: s}
	for re, n := range map[*regexp.Regexp]*int{faultFailedRE: &fs.failed, faultDroppedRE: &fs.dropped, faultPendingRE: &fs.pending} {
		if m := re.FindStringSubmatch(s.Line); m != nil {
			*n, _ = strconv.Atoi(m[1])
		}
	}
	return fs, true
}

// wait waits for pi-otel to exit and checks what every exit keeps: no
// death by signal, no panic, a summary line.
func (r *faultRun) wait() *faultResult {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(faultPoll):
		r.t.Fatalf("pi-otel did not exit within %v\nstderr:\n%s", faultPoll, r.stderrBytes())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	res := &faultResult{
		code: r.cmd.ProcessState.ExitCode(), stdout: bytes.Clone(r.stdout.Bytes()), stderr: bytes.Clone(r.stderr.Bytes()),
		recs: append([]faultRecord(nil), r.recs...), exited: r.exitedAt, start: r.start,
	}
	if ws, ok := r.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.signaled = true
	}
	if bytes.Contains(res.stderr, []byte("panic:")) {
		r.t.Errorf("pi-otel panicked:\n%s", res.stderr)
	}
	var ok bool
	if res.sum, ok = parseFaultSummary(res.stderr); !ok && !res.signaled {
		r.t.Errorf("no summary line on pi-otel's stderr:\n%s", res.stderr)
	}
	return res
}

// complete checks that pi-otel's stdout is Pi's whole run: every line a
// JSON record, the last one agent_settled.
func (res *faultResult) complete(t *testing.T) {
	t.Helper()
	lines := bytes.Count(res.stdout, []byte{'\n'})
	if lines == 0 || lines != len(res.recs) || !bytes.HasSuffix(res.stdout, []byte{'\n'}) {
		t.Errorf("stdout: %d lines, %d JSON records", lines, len(res.recs))
		return
	}
	if last := res.recs[len(res.recs)-1].typ; last != "agent_settled" {
		t.Errorf("stdout ends with %s, not agent_settled", last)
	}
}

func (r *faultRun) stderrBytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.stderr.Bytes())
}

// faultLines counts stderr lines holding sub.
func faultLines(stderr []byte, sub string) int {
	n := 0
	for _, l := range strings.Split(string(stderr), "\n") {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// faultGate blocks a scripted model answer until opened.
type faultGate struct {
	ch   chan struct{}
	once sync.Once
}

func newFaultGate(t *testing.T) *faultGate {
	g := &faultGate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *faultGate) open() { g.once.Do(func() { close(g.ch) }) }

// answer is a model response given only once the gate is open.
func (g *faultGate) answer(r fakemodel.Response) fakemodel.Response {
	return fakemodel.Func(func(fakemodel.Request) fakemodel.Response {
		<-g.ch
		return r
	})
}

// faultOTLP sends traces to a gRPC collector at addr as service, with a short
// schedule delay so that spans leave while Pi still runs.
func faultOTLP(addr, service string) []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr,
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_SERVICE_NAME=" + service,
		"OTEL_METRICS_EXPORTER=none",
		"OTEL_BSP_SCHEDULE_DELAY=50",
	}
}

// faultWaitSpans polls j until service holds at least n spans, and returns
// them.
func faultWaitSpans(t *testing.T, j *jaegertest.Jaeger, service string, since time.Time, n int) []*jaegertest.Span {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), faultPoll)
	defer cancel()
	var out []*jaegertest.Span
	for _, tr := range j.WaitService(t, ctx, service, since, n) {
		out = append(out, tr.Spans...)
	}
	return out
}

func faultNames(spans []*jaegertest.Span) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

// faultLag is the longest time between two records arriving on pi-otel's
// stdout: where Pi stopped to wait for something, scripted or not.
func faultLag(recs []faultRecord) (time.Duration, string) {
	var worst time.Duration
	var at string
	for i := 1; i < len(recs); i++ {
		if d := recs[i].at.Sub(recs[i-1].at); d > worst {
			worst, at = d, recs[i-1].typ+" → "+recs[i].typ
		}
	}
	return worst, at
}

// TestCollectorDownAtStart: no collector when pi-otel starts. Pi runs as
// usual, one line on stderr says what is wrong, the spans that end
// meanwhile wait in the queue, and once a real Jaeger starts on the
// configured address the exporter's retry delivers them, before Pi ends.
func TestCollectorDownAtStart(t *testing.T) {
	t.Parallel()
	addr := freeport.Addr(t)
	gate := newFaultGate(t)
	s := prepareJSON(t, "collector-down-at-start", "Run it",
		fakemodel.Tools(fakemodel.Bash("call_1", "echo one")),
		gate.answer(fakemodel.Text("Done.", 2)),
	)
	since := time.Now().Add(-time.Second)
	const service = "fault-down-at-start"
	r := faultStart(t, s.pi, faultOTLP(addr, service), append([]string{"run", "--"}, s.piArgs()...)...)

	// chat, tool and turn end while nothing listens; the first export
	// fails and says so.
	r.waitRecord("turn_end", 1)
	r.waitStderr("no collector at " + addr)
	down := time.Now()

	j := jaegertest.Start(t, jaegertest.WithOTLPGRPC(addr))
	up := time.Now()
	early := faultWaitSpans(t, j, service, since, 3)
	delivered := time.Now()
	t.Logf("collector up %v after the first failed export; the 3 early spans %v later: %v",
		up.Sub(down).Round(time.Millisecond), delivered.Sub(up).Round(time.Millisecond), faultNames(early))

	gate.open()
	res := r.wait()
	if res.code != 0 {
		t.Fatalf("pi-otel exited %d\n%s", res.code, res.stderr)
	}
	res.complete(t)
	if n := faultLines(res.stderr, "pi-otel: "); n != 2 {
		t.Errorf("want two pi-otel lines (the collector, the summary), got %d:\n%s", n, res.stderr)
	}
	if res.sum.failed+res.sum.dropped+res.sum.pending != 0 {
		t.Errorf("spans lost: %s", res.sum.Line)
	}
	all := faultWaitSpans(t, j, service, since, res.sum.Spans)
	if len(all) != res.sum.Spans {
		t.Errorf("Jaeger holds %d spans, pi-otel ended %d", len(all), res.sum.Spans)
	}
	lag, where := faultLag(res.recs)
	t.Logf("sent %d, delivered %d, dropped %d; longest gap between Pi's records %v (%s, the scripted wait)",
		res.sum.Spans, len(all), res.sum.dropped, lag.Round(time.Millisecond), where)
	traces := stored(t, j, service, since, &result{stderr: res.stderr, summary: res.sum.Summary})
	if len(traces) != 1 {
		t.Fatalf("%d traces", len(traces))
	}
	wantTree(t, v160, "bash-tool", traces[0]) // a tool, then an answer
}

// TestCollectorKilledAndRestarted: a real Jaeger is killed (SIGKILL) in
// the middle of a run and stays down for longer than one export with all
// its retries; a new one then starts on the same address. The spans that
// ended during the outage are delivered to the new one while Pi still
// runs, and none is lost. (Jaeger keeps traces in memory, so what the
// first one stored dies with it: the test reads it before the kill.)
func TestCollectorKilledAndRestarted(t *testing.T) {
	t.Parallel()
	addr := freeport.Addr(t)
	gate1, gate2 := newFaultGate(t), newFaultGate(t)
	s := prepareJSON(t, "collector-killed", "Run it twice",
		fakemodel.Tools(fakemodel.Bash("call_1", "echo one")),
		gate1.answer(fakemodel.Tools(fakemodel.Bash("call_2", "echo two"))),
		gate2.answer(fakemodel.Text("Done.", 2)),
	)
	const service = "fault-killed"
	// One export, retries included, gives up after --timeout.
	const exportTimeout = 2 * time.Second
	since := time.Now().Add(-time.Second)
	first := jaegertest.Start(t, jaegertest.WithOTLPGRPC(addr))
	r := faultStart(t, s.pi, append(faultOTLP(addr, service), fmt.Sprintf("OTEL_EXPORTER_OTLP_TIMEOUT=%d", exportTimeout.Milliseconds())),
		append([]string{"run", "--"}, s.piArgs()...)...)

	r.waitRecord("turn_end", 1)
	before := faultWaitSpans(t, first, service, since, 3)
	first.Kill(t)
	killed := time.Now()

	gate1.open()
	r.waitRecord("turn_end", 2)
	r.waitStderr("no collector at " + addr)
	// Stay down for three export timeouts: the exporter's own retries are
	// long over when the collector returns. Real time is the point: the
	// outage is what is tested.
	time.Sleep(3 * exportTimeout)
	second := jaegertest.Start(t, jaegertest.WithOTLPGRPC(addr))
	restarted := time.Now()
	during := faultWaitSpans(t, second, service, since, 3)
	t.Logf("outage %v; the 3 spans that ended during it reached the new collector %v after it started",
		restarted.Sub(killed).Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))

	gate2.open()
	res := r.wait()
	if res.code != 0 {
		t.Fatalf("pi-otel exited %d\n%s", res.code, res.stderr)
	}
	res.complete(t)
	after := faultWaitSpans(t, second, service, since, res.sum.Spans-len(before))
	seen := map[string]int{}
	for _, sp := range append(before, after...) {
		seen[sp.SpanID]++
	}
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	t.Logf("sent %d; delivered %d before the kill and %d after the restart (%d of them ended during the outage); %d duplicates; %s",
		res.sum.Spans, len(before), len(after), len(during), dups, res.sum.Line)
	if len(seen) != res.sum.Spans || res.sum.failed+res.sum.dropped+res.sum.pending != 0 {
		t.Errorf("pi-otel ended %d spans, the two collectors hold %d distinct: %s", res.sum.Spans, len(seen), res.sum.Line)
	}
	if n := faultLines(res.stderr, "pi-otel: "); n != 2 {
		t.Errorf("want two pi-otel lines (the collector, the summary), got %d:\n%s", n, res.stderr)
	}
}

// TestCollectorDownQueueFull: while the collector is down, more spans end
// than the queue holds (--queue-size 4). The overflow is dropped, never
// waited for; the summary line and the pi_otel.spans.dropped metric both
// say how many, and everything else reaches Jaeger once it is up. Jaeger
// comes up just before Pi ends, so the final flush must reconnect at once
// rather than wait out gRPC's reconnection backoff.
func TestCollectorDownQueueFull(t *testing.T) {
	t.Parallel()
	addr := freeport.Addr(t)
	gate := newFaultGate(t)
	var calls []fakemodel.ToolCall
	for i := range 6 {
		calls = append(calls, fakemodel.Bash(fmt.Sprintf("call_%d", i), fmt.Sprintf("echo %d", i)))
	}
	s := prepareJSON(t, "collector-down-queue-full", "Run six", fakemodel.Tools(calls...), gate.answer(fakemodel.Text("Done.", 2)))
	const service = "fault-queue-full"
	metricsFile := filepath.Join(t.TempDir(), "metrics.jsonl")
	since := time.Now().Add(-time.Second)
	r := faultStart(t, s.pi, append(faultOTLP(addr, service),
		"OTEL_BSP_MAX_QUEUE_SIZE=4", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=2",
		"OTEL_METRICS_EXPORTER=file", "PI_OTEL_METRICS_FILE="+metricsFile,
		"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE=cumulative"),
		append([]string{"run", "--"}, s.piArgs()...)...)

	// Eight spans (chat, six tools, turn) end while nothing listens: the
	// queue holds four and the batch being retried at most two.
	r.waitRecord("turn_end", 1)
	r.waitStderr("no collector at " + addr)
	j := jaegertest.Start(t, jaegertest.WithOTLPGRPC(addr))
	gate.open()
	res := r.wait()
	if res.code != 0 {
		t.Fatalf("pi-otel exited %d\n%s", res.code, res.stderr)
	}
	res.complete(t)
	sum := res.sum
	if sum.dropped < 2 || sum.failed+sum.pending != 0 {
		t.Errorf("want at least 2 spans dropped and none failed: %s", sum.Line)
	}
	got := faultWaitSpans(t, j, service, since, sum.Spans-sum.dropped)
	if len(got) != sum.Spans-sum.dropped {
		t.Errorf("Jaeger holds %d spans; pi-otel ended %d and dropped %d", len(got), sum.Spans, sum.dropped)
	}
	m := faultMetrics(t, metricsFile)
	if m["pi_otel.spans.dropped"] != int64(sum.dropped) || m["pi_otel.spans.ended"] != int64(sum.Spans) ||
		m["pi_otel.spans.exported"] != int64(sum.Spans-sum.dropped) {
		t.Errorf("health metrics %v disagree with %q", m, sum.Line)
	}
	t.Logf("sent %d, delivered %d, dropped %d (metric pi_otel.spans.dropped=%d); %s",
		sum.Spans, len(got), sum.dropped, m["pi_otel.spans.dropped"], sum.Line)
}

// faultMetrics reads the last value of each of pi-otel's health counters
// from a file of OTLP/JSON metric lines (cumulative temporality).
func faultMetrics(t *testing.T, path string) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		req, err := otlpjson.UnmarshalMetrics(line)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for m := range otlpwalk.Metrics(req) {
			if !strings.HasPrefix(m.Name, "pi_otel.") || m.GetSum() == nil {
				continue
			}
			for _, dp := range m.GetSum().DataPoints {
				out[m.Name] = dp.GetAsInt()
			}
		}
	}
	return out
}

// faultCollector is an OTLP/gRPC trace receiver that takes delay to
// answer each export and counts the spans it accepted.
type faultCollector struct {
	addr string
	r    *otlptest.Receiver
}

func startFaultCollector(tb testing.TB, delay time.Duration) *faultCollector {
	tb.Helper()
	r := &otlptest.Receiver{CountOnly: true, Answer: func(ctx context.Context, _ otlptest.Export) error {
		select {
		case <-time.After(delay):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	return &faultCollector{addr: r.StartGRPC(tb), r: r}
}

// spans is how many spans the collector accepted.
func (c *faultCollector) spans() int {
	_, n := c.r.Counts()
	return n
}

// exports is how many exports the collector accepted.
func (c *faultCollector) exports() int {
	n, _ := c.r.Counts()
	return n
}

// faultCaptures is every Pi 1.6.0 json-mode capture in testdata, one after
// the other; settledOnly leaves out the runs cut short by a signal and the
// one with a 1.7 MB tool output, for a stream dense in spans.
func faultCaptures(tb testing.TB, settledOnly bool) []byte {
	tb.Helper()
	files, err := filepath.Glob(repo.Captures("pi-1.6.0", "*.jsonl"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no captures: %v", err)
	}
	var out []byte
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasPrefix(base, "rpc-") || (settledOnly && (strings.HasPrefix(base, "sig") || base == "big-output.jsonl")) {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// faultStream writes a stream of at least size bytes to a file in dir:
// real captures repeated ("captures", about one span per 3 KB), or a long
// synthetic coding session ("session", internal/testutil/streamgen, about one span
// per 50 KB, with multi-megabyte tool outputs).
func faultStream(tb testing.TB, dir, kind string, size int) (string, []byte) {
	tb.Helper()
	var b []byte
	switch kind {
	case "captures":
		one := faultCaptures(tb, true)
		b = bytes.Repeat(one, (size+len(one)-1)/len(one))
	case "session":
		b, _ = streamgen.Generate(int64(size))
	default:
		tb.Fatalf("stream kind %q", kind)
	}
	path := filepath.Join(dir, kind+".jsonl")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path, b
}

// faultCatRun is one `pi-otel run -- cat FILE`.
type faultCatRun struct {
	stdout, stderr []byte
	code           int
	toData         time.Duration // until the consumer had every byte of the file
	toExit         time.Duration // until pi-otel exited
	sum            faultSummary
}

// faultCat runs `pi-otel run ARGS… -- cat FILE` with env, reading its
// stdout as fast as it comes. want is the file's size.
func faultCat(tb testing.TB, env []string, file string, want int, args ...string) faultCatRun {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, piOtelBin, append(append([]string{"run"}, args...), "--", "cat", file)...)
	cmd.Env = append(scrubbed(os.Environ()), env...)
	// Outside any git work tree: git, asked for the repository's vcs.*
	// attributes within 300 ms, can miss that bound on a loaded machine
	// in one run and not in another, and two runs' trees then differ.
	cmd.Dir = tb.TempDir()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	var r faultCatRun
	start := time.Now()
	out := proc.StartPiped(tb, cmd, proc.Stdout).Stdout
	buf := make([]byte, 0, want)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := out.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) >= want && r.toData == 0 {
			r.toData = time.Since(start)
		}
		if err != nil {
			break
		}
	}
	_ = cmd.Wait()
	r.toExit = time.Since(start)
	if ctx.Err() != nil {
		tb.Fatalf("pi-otel did not finish: %s", errb.Bytes())
	}
	r.stdout, r.stderr, r.code = buf, errb.Bytes(), cmd.ProcessState.ExitCode()
	var ok bool
	if r.sum, ok = parseFaultSummary(r.stderr); !ok {
		tb.Fatalf("no summary line (exit %d):\n%s", r.code, r.stderr)
	}
	return r
}

// TestCollectorSlow: the collector accepts but takes a second to answer
// each export, while a child writes 20 MB of real Pi records (about 5,000
// spans) as fast as it can. Every byte comes through unchanged, every span
// is counted, and what the collector did not take is reported as dropped.
// The throughput comparison is BenchmarkFaultThroughput.
func TestCollectorSlow(t *testing.T) {
	t.Parallel()
	file, want := faultStream(t, t.TempDir(), "captures", 20e6)
	base := faultCat(t, nil, file, len(want), "--traces-exporter", "none")
	slow := startFaultCollector(t, time.Second)
	r := faultCat(t, faultOTLP(slow.addr, "fault-slow"), file, len(want))
	if r.code != 0 || base.code != 0 {
		t.Fatalf("exit %d (baseline %d):\n%s", r.code, base.code, r.stderr)
	}
	if !bytes.Equal(r.stdout, want) {
		t.Fatalf("stdout: %d bytes, want the %d bytes of the stream", len(r.stdout), len(want))
	}
	sum := r.sum
	if sum.Spans != base.sum.Spans || sum.Traces != base.sum.Traces {
		t.Errorf("ended %d spans in %d traces, without export %d in %d", sum.Spans, sum.Traces, base.sum.Spans, base.sum.Traces)
	}
	got := slow.spans()
	if got+sum.dropped+sum.failed != sum.Spans {
		t.Errorf("collector got %d spans; %s", got, sum.Line)
	}
	t.Logf("%d MB: all bytes out after %v (no export: %v), exit after %v; sent %d, delivered %d in %d exports, dropped %d, failed %d",
		len(want)/1e6, r.toData.Round(time.Millisecond), base.toData.Round(time.Millisecond), r.toExit.Round(time.Millisecond),
		sum.Spans, got, slow.exports(), sum.dropped, sum.failed)
}

// TestCollectorBlackHole: the collector accepts connections and never
// answers. --flush-timeout bounds how long pi-otel waits at exit; what was
// not exported is counted as dropped. The time is reported, not asserted.
func TestCollectorBlackHole(t *testing.T) {
	t.Parallel()
	hole := collectortest.BlackHole(t)
	capture := repo.Captures("pi-1.6.0", "bash-tool.jsonl")
	want, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []struct{ name, endpoint string }{
		{"grpc", "http://" + hole},
		{"http/protobuf", "http://" + hole},
	} {
		r := faultCat(t, []string{
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + proto.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=" + proto.name,
			"OTEL_METRICS_EXPORTER=none",
		}, capture, len(want), "--flush-timeout", "1s")
		if r.code != 0 || !bytes.Equal(r.stdout, want) {
			t.Errorf("%s: exit %d, %d bytes out of %d:\n%s", proto.name, r.code, len(r.stdout), len(want), r.stderr)
		}
		if sum := r.sum; sum.Spans == 0 || sum.dropped+sum.failed != sum.Spans {
			t.Errorf("%s: want every span dropped or failed: %q", proto.name, sum.Line)
		}
		t.Logf("%s: all of Pi's bytes out after %v, pi-otel exited %v later (--flush-timeout 1s); %s",
			proto.name, r.toData.Round(time.Millisecond), (r.toExit - r.toData).Round(time.Millisecond), r.sum.Line)
	}
}

// faultTarget is where a benchmark's spans go.
type faultTarget struct {
	name string
	env  []string
	args []string
}

// faultTargets are the collectors the throughput is compared across:
// none at all (spans only counted), a healthy one, one that takes a second
// per export, one that accepts and never answers, and a refused port.
func faultTargets(b *testing.B) []faultTarget {
	up := startFaultCollector(b, 0)
	slow := startFaultCollector(b, time.Second)
	hole := collectortest.BlackHole(b)
	down := freeport.Addr(b)
	return []faultTarget{
		{name: "no-export", args: []string{"--traces-exporter", "none"}},
		{name: "collector", env: faultOTLP(up.addr, "bench")},
		{name: "slow-1s", env: faultOTLP(slow.addr, "bench")},
		{name: "black-hole", env: faultOTLP(hole, "bench")},
		{name: "down", env: faultOTLP(down, "bench")},
	}
}

// BenchmarkFaultThroughput: how fast Pi's output gets through pi-otel to
// its consumer, with the collector healthy, slow, black-holed or down.
// MB/s counts until the consumer has every byte; s-exit is the time pi-otel
// then takes to exit (the flush, at most --flush-timeout, 5s by default).
// "cat" is the same file through a plain pipe, without pi-otel.
//
//	go test -tags realstack ./test/e2e -run XXX -bench FaultThroughput -benchtime 3x
func BenchmarkFaultThroughput(b *testing.B) {
	dir := b.TempDir()
	targets := faultTargets(b)
	for _, kind := range []string{"captures", "session"} {
		file, want := faultStream(b, dir, kind, 100e6)
		b.Run(kind+"/cat", func(b *testing.B) {
			var data time.Duration
			for b.Loop() {
				start := time.Now()
				out, err := exec.Command("cat", file).Output()
				if err != nil || len(out) != len(want) {
					b.Fatalf("cat: %v, %d bytes", err, len(out))
				}
				data += time.Since(start)
			}
			b.ReportMetric(float64(len(want))/1e6/(data.Seconds()/float64(b.N)), "MB/s")
		})
		for _, tg := range targets {
			b.Run(kind+"/"+tg.name, func(b *testing.B) {
				var data, exit time.Duration
				var last faultCatRun
				for b.Loop() {
					last = faultCat(b, tg.env, file, len(want), tg.args...)
					if last.code != 0 || !bytes.Equal(last.stdout, want) {
						b.Fatalf("exit %d, %d bytes of %d:\n%s", last.code, len(last.stdout), len(want), last.stderr)
					}
					data += last.toData
					exit += last.toExit - last.toData
				}
				n := float64(b.N)
				b.ReportMetric(float64(len(want))/1e6/(data.Seconds()/n), "MB/s")
				b.ReportMetric(exit.Seconds()/n, "s-exit")
				b.ReportMetric(float64(last.sum.Spans), "spans")
				b.ReportMetric(float64(last.sum.dropped+last.sum.failed), "lost")
			})
		}
	}
}

// BenchmarkFaultLatency: how long a record Pi writes takes to reach the
// consumer while the exporter is busy. The child writes 20 MB of real
// records at once (about 3,600 spans, more than the queue holds), then 2,000
// stamped deltas one per millisecond (internal/testutil/streamgen -paced); the
// consumer measures each stamped record's delay.
//
//	go test -tags realstack ./test/e2e -run XXX -bench FaultLatency -benchtime 3x
func BenchmarkFaultLatency(b *testing.B) {
	dir := b.TempDir()
	gen := proc.MustBuild(b, dir, "./internal/testutil/streamgen/cmd/streamgen")
	file, _ := faultStream(b, dir, "captures", 20e6)
	script := fmt.Sprintf("cat %s && exec %s -paced 2000 -interval 1ms", file, gen)
	for _, tg := range faultTargets(b) {
		b.Run(tg.name, func(b *testing.B) {
			var worst streamgen.Latency
			var p50, p99 time.Duration
			for b.Loop() {
				cmd := exec.Command(piOtelBin, append(append([]string{"run"}, tg.args...), "--", "sh", "-c", script)...)
				cmd.Env = append(scrubbed(os.Environ()), tg.env...)
				out := proc.StartPiped(b, cmd, proc.Stdout).Stdout
				lat, err := streamgen.MeasureLatency(out, 0)
				if err != nil || lat.Count != 2000 {
					b.Fatalf("%d stamped records: %v", lat.Count, err)
				}
				_ = cmd.Wait()
				p50 += lat.P50
				p99 += lat.P99
				worst.Max = max(worst.Max, lat.Max)
			}
			n := time.Duration(b.N)
			b.ReportMetric(float64((p50 / n).Microseconds()), "p50-µs")
			b.ReportMetric(float64((p99 / n).Microseconds()), "p99-µs")
			b.ReportMetric(float64(worst.Max.Microseconds()), "max-µs")
		})
	}
}

// faultProcs maps each live process to its parent, from /proc.
func faultProcs() map[int]int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, state, ok := faultStat(pid); ok && state != "Z" {
			parent[pid] = ppid
		}
	}
	return parent
}

// faultStat reads a process's parent and state; ok is false once it is
// gone.
func faultStat(pid int) (ppid int, state string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, "", false
	}
	// The command name is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0], true
}

// faultAlive reports whether pid runs (a zombie has ended).
func faultAlive(pid int) bool {
	_, state, ok := faultStat(pid)
	return ok && state != "Z"
}

// faultFind polls until a descendant of root runs argv (or, with argv
// empty, until root has a child), and returns its pid.
func faultFind(t *testing.T, root int, argv ...string) int {
	t.Helper()
	want := strings.Join(argv, "\x00") + "\x00"
	found := 0
	find := func() bool {
		parent := faultProcs()
		for pid := range parent {
			below := false
			for p := parent[pid]; p != 0 && !below; p = parent[p] {
				below = p == root
			}
			if !below {
				continue
			}
			if len(argv) == 0 && parent[pid] == root {
				found = pid
				return true
			}
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && string(b) == want {
				found = pid
				return true
			}
		}
		return false
	}
	wait.For(t, faultPoll, find, func() string { return fmt.Sprintf("no process below %d runs %q", root, argv) })
	return found
}

// faultGone polls until pid has ended and returns how long that took; the
// bound is a hang guard.
func faultGone(t *testing.T, pid int, what string) time.Duration {
	t.Helper()
	start := time.Now()
	wait.For(t, faultPoll, func() bool { return !faultAlive(pid) },
		func() string { return fmt.Sprintf("%s (pid %d) still runs", what, pid) })
	return time.Since(start)
}

// faultSleepScenario is a run whose bash tool sleeps until a signal comes.
func faultSleepScenario(t *testing.T, name string) *setup {
	return prepareJSON(t, name, "Sleep",
		fakemodel.Tools(fakemodel.Bash("call_sleep", "sleep 300")),
		fakemodel.Text("unused", 1),
	)
}

// faultRoot checks the root of the single trace service stored since
// since, and returns its attributes.
func faultRoot(t *testing.T, j *jaegertest.Jaeger, service string, since time.Time, res *faultResult) *jaegertest.Span {
	t.Helper()
	traces := stored(t, j, service, since, &result{stderr: res.stderr, summary: res.sum.Summary})
	if len(traces) != 1 {
		t.Fatalf("%d traces", len(traces))
	}
	return root(t, traces[0])
}

// TestPiKilledMidTool: Pi dies of SIGKILL while its bash tool runs, with
// no chance to say anything. pi-otel exits as Pi did (137), closes the
// trace with end_reason signal and exports it. The tool's process outlives
// Pi, as it would without pi-otel.
func TestPiKilledMidTool(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	s := faultSleepScenario(t, "pi-sigkill")
	const service = "fault-pi-sigkill"
	since := time.Now().Add(-time.Second)
	r := faultStart(t, s.pi, faultOTLP(j.OTLPGRPC, service), append([]string{"run", "--"}, s.piArgs()...)...)
	r.waitRecord("tool_execution_start", 1)
	pi := faultFind(t, r.cmd.Process.Pid)
	tool := faultFind(t, r.cmd.Process.Pid, "sleep", "300")
	if err := syscall.Kill(pi, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	res := r.wait()
	if res.code != 137 || res.signaled {
		t.Fatalf("pi-otel exited %d (signaled %v), want 137\n%s", res.code, res.signaled, res.stderr)
	}
	rt := faultRoot(t, j, service, since, res)
	wantAttrs(t, rt, map[string]any{
		"pi.end_reason": "signal", "pi.signal": "SIGKILL", "pi.exit_code": int64(137),
		"pi.settled": false, "pi.outcome": "unsettled",
	})
	if rt.Status.Code != "error" {
		t.Errorf("root status %+v", rt.Status)
	}
	t.Logf("pi-otel exited %v after Pi was killed; %s; the tool's sleep still runs: %v",
		res.exited.Sub(killed).Round(time.Millisecond), res.sum.Line, faultAlive(tool))
}

// TestPiOtelKilled: pi-otel itself dies of SIGKILL while Pi's bash tool
// runs. The kernel's parent-death signal (SIGTERM) reaches Pi, which shuts
// down and takes its tool's process with it: nothing is left writing into
// a pipe nobody reads.
func TestPiOtelKilled(t *testing.T) {
	t.Parallel()
	s := faultSleepScenario(t, "pi-otel-sigkill")
	r := faultStart(t, s.pi, []string{"OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none"},
		append([]string{"run", "--"}, s.piArgs()...)...)
	r.waitRecord("tool_execution_start", 1)
	pi := faultFind(t, r.cmd.Process.Pid)
	tool := faultFind(t, r.cmd.Process.Pid, "sleep", "300")
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Poll before waiting for pi-otel: the wait also waits for every
	// holder of its stderr, Pi included.
	piGone := faultGone(t, pi, "Pi")
	toolGone := faultGone(t, tool, "Pi's bash tool")
	res := r.wait()
	if !res.signaled {
		t.Fatalf("pi-otel survived SIGKILL: exit %d", res.code)
	}
	t.Logf("after pi-otel was killed, Pi was gone within %v and its tool's process within %v",
		piGone.Round(time.Millisecond), (piGone + toolGone).Round(time.Millisecond))
}

// TestSignalsGoToPi: SIGINT and SIGTERM sent to pi-otel while Pi's bash
// tool runs reach Pi, which dies of SIGINT (130) or shuts down on SIGTERM
// (143); pi-otel exits with the same code and the trace says which
// signal ended it. What happens to the tool's process is Pi's doing, the
// same as without pi-otel: SIGTERM kills it, SIGINT leaves it running.
func TestSignalsGoToPi(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	for _, c := range []struct {
		sig       syscall.Signal
		name      string
		code      int
		toolLives bool
	}{
		{syscall.SIGINT, "SIGINT", 130, true},
		{syscall.SIGTERM, "SIGTERM", 143, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := faultSleepScenario(t, "signal-"+c.name)
			service := "fault-" + strings.ToLower(c.name)
			since := time.Now().Add(-time.Second)
			r := faultStart(t, s.pi, faultOTLP(j.OTLPGRPC, service), append([]string{"run", "--"}, s.piArgs()...)...)
			r.waitRecord("tool_execution_start", 1)
			pi := faultFind(t, r.cmd.Process.Pid)
			tool := faultFind(t, r.cmd.Process.Pid, "sleep", "300")
			if err := r.cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			res := r.wait()
			if res.code != c.code || res.signaled {
				t.Fatalf("pi-otel exited %d (signaled %v), want %d\n%s", res.code, res.signaled, c.code, res.stderr)
			}
			if faultAlive(pi) {
				t.Errorf("Pi (pid %d) still runs after pi-otel exited", pi)
			}
			if c.toolLives {
				if !faultAlive(tool) {
					t.Errorf("the tool's process ended; Pi leaves it running after %s", c.name)
				}
			} else {
				faultGone(t, tool, "the tool's process")
			}
			rt := faultRoot(t, j, service, since, res)
			wantAttrs(t, rt, map[string]any{
				"pi.end_reason": "signal", "pi.signal": c.name, "pi.exit_code": int64(c.code), "pi.outcome": "unsettled",
			})
			t.Logf("%s: exit %d after %v; the tool's process still runs: %v",
				c.name, res.code, res.exited.Sub(res.start).Round(time.Millisecond), faultAlive(tool))
		})
	}
}

// TestSecondSignalStopsWaiting: a child that ignores SIGTERM (Pi does not,
// so a shell stands in for it) keeps pi-otel waiting after the first
// SIGTERM, which is forwarded. A second one, sent after the duplicate
// window (250 ms), kills the child with SIGKILL: pi-otel exits 137 and the
// trace, already begun from the child's records, ends with end_reason
// signal.
func TestSecondSignalStopsWaiting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	capture := repo.Captures("pi-1.6.0", "sigterm-mid-tool.jsonl")
	traces := filepath.Join(dir, "traces.jsonl")
	// The shell stops writing to pi-otel's pipe after the capture, so what
	// pi-otel waits for is the child itself.
	script := fmt.Sprintf(`trap "" INT TERM; cat %s; exec >/dev/null 2>&1; while :; do sleep 1; done`, capture)
	ctx, cancel := context.WithTimeout(context.Background(), faultPoll)
	defer cancel()
	cmd := exec.CommandContext(ctx, piOtelBin, "run", "--traces-exporter", "file", "--traces-file", traces, "--", "sh", "-c", script)
	cmd.Env = scrubbed(os.Environ())
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out := proc.StartPiped(t, cmd, proc.Stdout).Stdout
	want, err := os.ReadFile(capture)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(out, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("stdout is not the capture: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	// Past the duplicate window: a second request. Real time is the
	// point: the window is pi-otel's own clock, as for a person who
	// presses Ctrl-C twice.
	time.Sleep(400 * time.Millisecond)
	first := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("pi-otel still waits after the second SIGTERM:\n%s", errb.Bytes())
	}
	if code := cmd.ProcessState.ExitCode(); code != 137 {
		t.Fatalf("pi-otel exited %d, want 137:\n%s", code, errb.Bytes())
	}
	faultFileRoot(t, traces).WantAttrs(t, map[string]string{"pi.end_reason": "signal", "pi.signal": "SIGKILL", "pi.exit_code": "137"})
	t.Logf("pi-otel exited %v after the second SIGTERM", time.Since(first).Round(time.Millisecond))
}

// faultFileRoot returns the one root span in an OTLP/JSON lines trace
// file.
func faultFileRoot(t *testing.T, path string) *spantree.Node {
	t.Helper()
	return spantree.One(t, spantree.ReadOTLPFile(t, path))
}

// faultHead runs cmd with its stdout read by something like `head -1`:
// one line, then the read end is closed. It returns that line.
func faultHead(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the first line: %v", err)
	}
	_ = r.Close()
	return line
}

// TestConsumerClosesEarly: `pi-otel run -- pi … | head -1`. pi-otel
// behaves as Pi does in that pipe (same exit code; Pi's stdout is closed
// under it so its next write fails as it would), does not die of SIGPIPE
// or panic, and still closes and exports the trace.
func TestConsumerClosesEarly(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	script := []fakemodel.Response{
		fakemodel.Tools(fakemodel.Bash("call_1", "echo one")),
		fakemodel.Text("Done.", 2),
	}
	args := []string{"--mode", "json", "--no-session", "Run it"}

	// Pi alone in the pipe.
	direct := prepareScenario(t, capture.Scenario{Name: "head-direct", Script: script, Args: args})
	ctx, cancel := context.WithTimeout(context.Background(), faultPoll)
	defer cancel()
	cmd := direct.pi.Command(ctx, direct.pi.Args(args...)...)
	var directErr bytes.Buffer
	cmd.Stderr = &directErr
	firstDirect := faultHead(t, cmd)
	direct.pi.Track(cmd)
	_ = cmd.Wait()
	directCode := cmd.ProcessState.ExitCode()
	directSig := ""
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		directSig = ws.Signal().String()
	}

	// Pi under pi-otel.
	s := prepareScenario(t, capture.Scenario{Name: "head", Script: script, Args: args})
	const service = "fault-head"
	since := time.Now().Add(-time.Second)
	cmd = s.pi.Wrap(ctx, piOtelBin, append([]string{"run", "--"}, s.piArgs()...)...)
	cmd.Env = append(scrubbed(cmd.Env), faultOTLP(j.OTLPGRPC, service)...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	first := faultHead(t, cmd)
	s.pi.Track(cmd)
	_ = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("pi-otel did not exit:\n%s", errb.Bytes())
	}
	res := &faultResult{code: cmd.ProcessState.ExitCode(), stderr: errb.Bytes()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("pi-otel died of %v:\n%s", ws.Signal(), errb.Bytes())
	}
	if bytes.Contains(res.stderr, []byte("panic")) {
		t.Fatalf("pi-otel panicked:\n%s", res.stderr)
	}
	var ok bool
	if res.sum, ok = parseFaultSummary(res.stderr); !ok {
		t.Fatalf("no summary:\n%s", res.stderr)
	}
	t.Logf("Pi alone: exit %d %s, first line %.40q…, stderr %q", directCode, directSig, firstDirect, directErr.String())
	t.Logf("under pi-otel: exit %d, first line %.40q…, stderr %q", res.code, first, errb.String())
	if res.code != directCode {
		t.Errorf("pi-otel exited %d; Pi alone in the same pipe exits %d", res.code, directCode)
	}
	rt := faultRoot(t, j, service, since, res)
	reason := "exit"
	if directSig != "" {
		reason = "signal"
	}
	wantAttrs(t, rt, map[string]any{"pi.end_reason": reason, "pi.exit_code": int64(directCode), "pi.settled": false})
	t.Logf("root: end_reason=%v exit_code=%v outcome=%v", rt.Attrs["pi.end_reason"], rt.Attrs["pi.exit_code"], rt.Attrs["pi.outcome"])
}

// faultFuture rewrites a real capture the way a future Pi might: a record
// of an unknown type after every third record (flat, nested, one reusing
// known field names with other shapes), and new fields everywhere in the
// known ones, at the top, in messages, in usage, and a content part of an
// unknown type. It returns the stream, the number of records added, and
// how many of those came while a run was open: the others have no span to
// note them on.
func faultFuture(orig []byte) (out []byte, added, inRun int) {
	unknown := []string{
		`{"type":"agent_heartbeat","seq":1}`,
		`{"type":"plan_update","plan":{"steps":[{"id":"s1","done":false,"children":[]}],"version":2},"flags":[true,null,3.5]}`,
		`{"type":"tool_execution_progress","toolCallId":{"id":"x"},"durationMs":"soon","message":[1,2],"isError":"maybe"}`,
		`{"type":"usage_report","usage":{"input":{"text":5,"audio":2}},"cost":[0.1]}`,
	}
	open := false
	lines := bytes.SplitAfter(orig, []byte{'\n'})
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			out = append(out, line...)
			continue
		}
		rec := bytes.TrimSuffix(line, []byte{'\n'})
		switch {
		case bytes.HasPrefix(rec, []byte(`{"type":"agent_start"`)):
			open = true
		case bytes.HasPrefix(rec, []byte(`{"type":"agent_settled"`)):
			open = false
		}
		rec = bytes.ReplaceAll(rec, []byte(`"message":{`), []byte(`"message":{"futureMeta":{"origin":"v9","tags":["a",{"b":null}]},`))
		rec = bytes.ReplaceAll(rec, []byte(`"usage":{`), []byte(`"usage":{"audio":{"input":3,"output":[1]},`))
		rec = bytes.ReplaceAll(rec, []byte(`"content":[{`), []byte(`"content":[{"type":"hologram","frames":[{"x":1}]},{`))
		rec = append(bytes.TrimSuffix(rec, []byte{'}'}), []byte(`,"futureField":{"nested":[1,"two",{"three":3}],"empty":{}}}`)...)
		out = append(append(out, rec...), '\n')
		if i%3 == 2 {
			out = append(append(out, unknown[added%len(unknown)]...), '\n')
			added++
			if open {
				inRun++
			}
		}
	}
	return out, added, inRun
}

// faultDump renders the spans of an OTLP/JSON lines file as a sorted,
// indented tree with every attribute and event, leaving out ids, the
// events named skipEvent and, unless times is set, all times.
func faultDump(t *testing.T, path, skipEvent string, times bool) (dump string, skipped int) {
	t.Helper()
	var w strings.Builder
	var walk func(nodes []*spantree.Node, depth int)
	walk = func(nodes []*spantree.Node, depth int) {
		nodes = slices.Clone(nodes)
		slices.SortStableFunc(nodes, func(a, b *spantree.Node) int {
			if c := a.Start.Compare(b.Start); c != 0 {
				return c
			}
			return strings.Compare(a.Name, b.Name)
		})
		for _, n := range nodes {
			ind := strings.Repeat("  ", depth)
			fmt.Fprintf(&w, "%s%s kind=%s status=%s %q\n", ind, n.Name, n.Kind, n.Status.Code, n.Status.Message)
			if times {
				fmt.Fprintf(&w, "%s  @ %d..%d\n", ind, n.Start.UnixNano(), n.End.UnixNano())
			}
			fmt.Fprintf(&w, "%s  %s\n", ind, faultAttrText(n.Attrs, times))
			for _, e := range n.Events {
				if e.Name == skipEvent {
					skipped++
					continue
				}
				at := ""
				if times {
					at = fmt.Sprintf(" @ %d", e.Time.UnixNano())
				}
				fmt.Fprintf(&w, "%s  event %s%s %s\n", ind, e.Name, at, faultAttrText(e.Attrs, times))
			}
			walk(n.Children, depth+1)
		}
	}
	walk(spantree.ReadOTLPFile(t, path), 0)
	return w.String(), skipped
}

// faultAttrText renders attributes sorted by key; without times it leaves
// out the one measured by the clock (time to first chunk).
func faultAttrText(a map[string]string, times bool) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if times || k != "gen_ai.response.time_to_first_chunk" {
			parts = append(parts, k+"="+a[k])
		}
	}
	return strings.Join(parts, " ")
}

// TestFutureRecords: real captures with records of unknown types and new
// fields of new shapes injected, as a future Pi might write them. `run`
// passes the stream through byte for byte, and `replay` gives exactly the
// tree of the original capture (same spans, attributes and times), the
// unknown records only adding pi.unknown_event span events.
func TestFutureRecords(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"parallel-tools", "retry-529", "threshold-compaction", "sigterm-mid-tool"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig, err := os.ReadFile(repo.Captures("pi-1.6.0", name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			future, added, inRun := faultFuture(orig)
			futurePath := filepath.Join(dir, "future.jsonl")
			origPath := filepath.Join(dir, "orig.jsonl")
			for p, b := range map[string][]byte{futurePath: future, origPath: orig} {
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			traced := func(cmd string, file string) (string, faultCatRun) {
				out := filepath.Join(dir, cmd+"-"+filepath.Base(file))
				args := []string{"--traces-exporter", "file", "--traces-file", out}
				if cmd == "run" {
					want, _ := os.ReadFile(file)
					return out, faultCat(t, nil, file, len(want), args...)
				}
				c := exec.Command(piOtelBin, append(append([]string{"replay"}, args...), file)...)
				c.Env = scrubbed(os.Environ())
				b, err := c.CombinedOutput()
				if err != nil {
					t.Fatalf("replay %s: %v\n%s", file, err, b)
				}
				return out, faultCatRun{stderr: b}
			}

			runFuture, r := traced("run", futurePath)
			if r.code != 0 || !bytes.Equal(r.stdout, future) {
				t.Fatalf("run: exit %d, stdout differs from the input (%d bytes of %d)", r.code, len(r.stdout), len(future))
			}
			runOrig, _ := traced("run", origPath)
			replayFuture, rf := traced("replay", futurePath)
			replayOrig, _ := traced("replay", origPath)

			want, _ := faultDump(t, replayOrig, "", true)
			got, unknown := faultDump(t, replayFuture, "pi.unknown_event", true)
			if got != want {
				t.Errorf("replayed tree changed:\n%s\nwant:\n%s", got, want)
			}
			if unknown != inRun {
				t.Errorf("%d pi.unknown_event events for %d unknown records during a run", unknown, inRun)
			}
			wantRun, _ := faultDump(t, runOrig, "", false)
			gotRun, _ := faultDump(t, runFuture, "pi.unknown_event", false)
			if gotRun != wantRun {
				t.Errorf("live tree changed:\n%s\nwant:\n%s", gotRun, wantRun)
			}
			// New types with new field names decode without a word.
			for _, typ := range []string{"agent_heartbeat", "plan_update"} {
				if bytes.Contains(r.stderr, []byte(typ)) || bytes.Contains(rf.stderr, []byte(typ)) {
					t.Errorf("a warning about %s:\nrun: %s\nreplay: %s", typ, r.stderr, rf.stderr)
				}
			}
			t.Logf("%d records, %d unknown ones added, every known one extended; stderr of run: %q; of replay: %q",
				bytes.Count(orig, []byte{'\n'}), added, r.stderr, rf.stderr)
		})
	}
}
