//go:build realstack

// Package e2e runs the built pi-otel around the real Pi, against a scripted
// fake model, exporting to a real Jaeger, and asserts on the traces Jaeger
// stored. Every tool it needs comes from scripts/deps.sh; a missing one fails
// the tests rather than skipping them.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/capture"
	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/piotel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
)

// piOtelBin is the pi-otel binary every test here runs: $PI_OTEL_BIN when
// set (to check a release build), else the one TestMain builds.
var piOtelBin string

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	if bin := os.Getenv(piotel.EnvBin); bin != "" {
		piOtelBin = bin
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "pi-otel-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin, err := proc.Build(dir, "./cmd/pi-otel")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	piOtelBin = bin
	return m.Run()
}

// hangGuard bounds one pi-otel run, so a hung child fails the test instead
// of the whole package timing out. It is not a performance assertion.
const hangGuard = 2 * time.Minute

// setup is one scripted capture scenario made ready to run: the fake model
// plays its script and a hermetic Pi is configured with its model and
// settings.
type setup struct {
	scenario capture.Scenario
	model    *fakemodel.Server
	pi       *pitest.Env
}

// prepare looks up the capture scenario called name (see
// internal/testutil/capture/scenarios.go) and prepares it. opts come after the
// scenario's own, so a test can pick another Pi.
func prepare(t *testing.T, name string, opts ...pitest.Option) *setup {
	t.Helper()
	for _, c := range capture.Scenarios() {
		if c.Name == name {
			return prepareScenario(t, c, opts...)
		}
	}
	t.Fatalf("no capture scenario %q", name)
	return nil
}

// prepareJSON prepares a scenario of its own: Pi in json mode, no session,
// sent prompt, the fake model answering with script.
func prepareJSON(t *testing.T, name, prompt string, script ...fakemodel.Response) *setup {
	t.Helper()
	return prepareScenario(t, capture.Scenario{Name: name, Script: script, Args: []string{"--mode", "json", "--no-session", prompt}})
}

// prepareScenario starts the fake model for s and a hermetic Pi for it.
func prepareScenario(t *testing.T, s capture.Scenario, opts ...pitest.Option) *setup {
	t.Helper()
	fm := []fakemodel.Option{fakemodel.WithScript(s.Script...)}
	if s.Summary != "" {
		fm = append(fm, fakemodel.WithSummaries(s.Summary, 3))
	}
	model := fakemodel.Start(t, fm...)
	m := pitest.DefaultModel()
	if s.Model != nil {
		s.Model(&m)
	}
	all := append([]pitest.Option{pitest.WithModel(m), pitest.WithSettings(s.Settings)}, opts...)
	return &setup{scenario: s, model: model, pi: pitest.New(t, model.URL(), all...)}
}

// piArgs is the Pi command line of the scenario: the Pi binary, the
// provider flags and the scenario's arguments.
func (s *setup) piArgs() []string {
	return append([]string{s.pi.Pi}, s.pi.Args(s.scenario.Args...)...)
}

// check runs the scenario's own capture check on a stream that came
// through pi-otel: what Pi wrote must still show what the scenario claims.
func (s *setup) check(t *testing.T, r *result) {
	t.Helper()
	if s.scenario.Check == nil {
		return
	}
	c := &capture.Capture{Meta: capture.Meta{ExitCode: r.code}, Stdout: r.stdout}
	recs, err := c.Records()
	if err != nil {
		t.Fatalf("pi-otel's stdout is not Pi's JSONL: %v", err)
	}
	if err := s.scenario.Check(c, recs); err != nil {
		t.Errorf("scenario %s through pi-otel: %v", s.scenario.Name, err)
	}
}

// direct runs the scenario's Pi without pi-otel, against a fresh fake model
// playing the same script, and returns its stdout.
func direct(t *testing.T, name string) []byte {
	t.Helper()
	s := prepare(t, name)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := s.pi.Run(s.pi.Command(ctx, s.pi.Args(s.scenario.Args...)...))
	if err != nil {
		t.Fatalf("direct pi: %v", err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("direct pi exited %d: %s", res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// call is one pi-otel invocation.
type call struct {
	args  []string // pi-otel's arguments, e.g. run -- pi …
	env   []string // added to Pi's hermetic environment
	stdin io.Reader
	// started, when set, is called once pi-otel has started.
	started func(p *os.Process)
	// onRecord, when set, sees each stdout line as it arrives.
	onRecord func(rec map[string]any, p *os.Process)
}

// result is a finished pi-otel.
type result struct {
	stdout, stderr []byte
	code           int  // the exit code; -1 when pi-otel itself died of a signal
	signaled       bool // pi-otel died of a signal (it never should)
	summary        summaryline.Summary
}

// scrubbed drops from env what the test process may have inherited and
// would change pi-otel's settings: every OTEL_* variable and a caller's
// trace context. Tests set what they mean.
func scrubbed(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || k == "TRACEPARENT" || k == "TRACESTATE" {
			continue
		}
		out = append(out, kv)
	}
	// No test's undelivered spans may reach another test's collector
	// through the user's spool; the spool's own tests set a directory.
	return append(out, "PI_OTEL_SPOOL_DIR=none")
}

// runPiOtel runs pi-otel with Pi's hermetic environment and waits for it.
func runPiOtel(t *testing.T, pi *pitest.Env, c call) *result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := pi.Wrap(ctx, piOtelBin, c.args...)
	cmd.Env = append(scrubbed(cmd.Env), c.env...)
	cmd.Stdin = c.stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var onLine func([]byte, *os.Process)
	if c.onRecord != nil {
		onLine = func(line []byte, p *os.Process) {
			var rec map[string]any
			if json.Unmarshal(line, &rec) == nil {
				c.onRecord(rec, p)
			}
		}
	}
	stdout, err := proc.Run(cmd, func(p *os.Process) {
		pi.Track(cmd)
		if c.started != nil {
			c.started(p)
		}
	}, onLine)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("pi-otel %v did not finish within %v\nstderr:\n%s", c.args, hangGuard, stderr.Bytes())
	}
	res := &result{stdout: stdout, stderr: stderr.Bytes(), code: cmd.ProcessState.ExitCode()}
	if _, sig := proc.ExitCode(cmd.ProcessState); sig != 0 {
		res.signaled = true
		t.Errorf("pi-otel died of %v\nstderr:\n%s", sig, stderr.Bytes())
	}
	if bytes.Contains(res.stderr, []byte("panic:")) {
		t.Errorf("pi-otel panicked:\n%s", res.stderr)
	}
	var ok bool
	if res.summary, ok = summaryline.Parse(res.stderr); !ok && !slices.Contains(c.args, "--quiet") {
		t.Errorf("no summary line on pi-otel's stderr:\n%s", res.stderr)
	}
	return res
}

// otlpGRPC is the environment that sends pi-otel's spans to j over OTLP/gRPC
// as service. Jaeger takes no metrics, so they are off.
func otlpGRPC(j *jaegertest.Jaeger, service string) []string {
	return otlpEnv("http://"+j.OTLPGRPC, "grpc", service)
}

// otlpHTTP is otlpGRPC over OTLP/HTTP with protobuf bodies.
func otlpHTTP(j *jaegertest.Jaeger, service string) []string {
	return otlpEnv(j.OTLPHTTP, "http/protobuf", service)
}

func otlpEnv(endpoint, protocol, service string) []string {
	return []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint,
		"OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
		"OTEL_SERVICE_NAME=" + service,
		"OTEL_METRICS_EXPORTER=none",
	}
}

// traced runs the scenario under `pi-otel run` exporting to j as a service
// of its own, checks that pi-otel exits 0 and reports a summary, and returns the result with
// the traces Jaeger stored, oldest first.
func traced(t *testing.T, j *jaegertest.Jaeger, s *setup, service string) (*result, []*jaegertest.Trace) {
	t.Helper()
	since := time.Now().Add(-time.Second)
	r := runPiOtel(t, s.pi, call{
		args: append([]string{"run", "--"}, s.piArgs()...),
		env:  otlpGRPC(j, service),
	})
	if r.code != 0 {
		t.Fatalf("pi-otel exited %d\nstderr:\n%s", r.code, r.stderr)
	}
	return r, stored(t, j, service, since, r)
}

// stored waits until Jaeger holds every span pi-otel's summary reported for
// service, and returns the traces oldest first, each checked for the
// invariants every trace keeps.
func stored(t *testing.T, j *jaegertest.Jaeger, service string, since time.Time, r *result) []*jaegertest.Trace {
	t.Helper()
	sum := r.summary
	if sum.Line == "" {
		t.Fatalf("no summary on stderr:\n%s", r.stderr)
	}
	if sum.Trouble() {
		t.Errorf("export trouble: %s", sum.Line)
	}
	if sum.Spans == 0 {
		// All of stderr: the lines before the summary say why no run was
		// traced (a session file left alone as another Pi's, say).
		t.Fatalf("pi-otel ended no spans: %s\nstderr:\n%s", sum.Line, r.stderr)
	}
	traces := j.WaitService(t, context.Background(), service, since, sum.Spans)
	got := 0
	for _, tr := range traces {
		got += len(tr.Spans)
	}
	if len(traces) != sum.Traces || got != sum.Spans {
		t.Fatalf("Jaeger holds %d traces with %d spans of %s; pi-otel said %q", len(traces), got, service, sum.Line)
	}
	if sum.TraceID != "" && traces[0].ID != sum.TraceID {
		t.Errorf("Jaeger's trace %s, pi-otel said %s", traces[0].ID, sum.TraceID)
	}
	sort.SliceStable(traces, func(a, b int) bool { return root(t, traces[a]).Start.Before(root(t, traces[b]).Start) })
	for _, tr := range traces {
		wellFormed(t, tr)
	}
	return traces
}

// root is a trace's single root span.
func root(t *testing.T, tr *jaegertest.Trace) *jaegertest.Span {
	t.Helper()
	roots := tr.Roots()
	if len(roots) != 1 {
		t.Fatalf("trace %s has %d roots:\n%s", tr.ID, len(roots), tr.Tree())
	}
	return roots[0]
}

// wellFormed checks what holds for every trace pi-otel exports: one root
// called invoke_agent pi, every span ended within its parent's lifetime,
// chat spans are CLIENT and the others INTERNAL.
func wellFormed(t *testing.T, tr *jaegertest.Trace) {
	t.Helper()
	r := root(t, tr)
	if r.Name != "invoke_agent pi" {
		t.Errorf("root %q, want invoke_agent pi", r.Name)
	}
	for _, s := range tr.Spans {
		if s.End.IsZero() || s.End.Before(s.Start) {
			t.Errorf("%s: start %v end %v", s.Name, s.Start, s.End)
		}
		// Jaeger keeps times to the microsecond: allow that much.
		if p := s.Parent; p != nil && (p.Start.Sub(s.Start) >= time.Microsecond || s.End.Sub(p.End) >= time.Microsecond) {
			t.Errorf("%s [%v, %v] outside its parent %s [%v, %v]", s.Name, s.Start, s.End, p.Name, p.Start, p.End)
		}
		want := "internal"
		if strings.HasPrefix(s.Name, "chat ") {
			want = "client"
		}
		if s.Kind != want {
			t.Errorf("%s: kind %s, want %s", s.Name, s.Kind, want)
		}
	}
}

// wantTree compares traces with the golden tree of capture version/name
// (testdata/captures): a live run must give the tree its capture gives.
func wantTree(t *testing.T, version, name string, traces ...*jaegertest.Trace) {
	t.Helper()
	spantree.Want(t, spantree.CaptureTree(version, name), jaegertest.Forest(t, traces...))
}

// wantAttrs checks attributes by value: strings, int64, float64 or bool,
// as Jaeger decodes them.
func wantAttrs(t *testing.T, s *jaegertest.Span, want map[string]any) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got, ok := s.Attrs[k]; !ok || got != want[k] {
			t.Errorf("%s: %s = %#v, want %#v", s.Name, k, got, want[k])
		}
	}
}

// positive checks that numeric attributes are set and above zero.
func positive(t *testing.T, s *jaegertest.Span, keys ...string) {
	t.Helper()
	for _, k := range keys {
		switch v := s.Attrs[k].(type) {
		case int64:
			if v <= 0 {
				t.Errorf("%s: %s = %d, want > 0", s.Name, k, v)
			}
		case float64:
			if v <= 0 {
				t.Errorf("%s: %s = %v, want > 0", s.Name, k, v)
			}
		default:
			t.Errorf("%s: %s = %#v, want a number > 0", s.Name, k, v)
		}
	}
}

// only returns the single span called name in tr.
func only(t *testing.T, tr *jaegertest.Trace, name string) *jaegertest.Span {
	t.Helper()
	ss := tr.Named(name)
	if len(ss) != 1 {
		t.Fatalf("%d spans called %s:\n%s", len(ss), name, tr.Tree())
	}
	return ss[0]
}

// records decodes JSONL the way Pi frames it (LF only).
func records(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	c := &capture.Capture{Stdout: b}
	recs, err := c.Records()
	if err != nil {
		t.Fatalf("not JSONL: %v", err)
	}
	return recs
}
