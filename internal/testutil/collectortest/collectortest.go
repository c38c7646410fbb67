// Package collectortest starts real OpenTelemetry Collector processes from the shipped
// configuration files, bound to loopback, for tests: the project's own distribution
// (pi-otel-collector, $PI_OTEL_COLLECTOR) as agent and gateways, with Jaeger v2
// (internal/testutil/jaegertest) as the trace backends.
package collectortest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
)

// CollectorEnv names pi-otel-collector, built from collector/builder-config.yaml by
// scripts/deps.sh.
const CollectorEnv = "PI_OTEL_COLLECTOR"

// readyTimeout bounds the wait for a health endpoint; it is a liveness guard, not an assertion.
const readyTimeout = 60 * time.Second

// Binary returns $PI_OTEL_COLLECTOR, failing t when it is missing.
func Binary(t testing.TB) string {
	t.Helper()
	return proc.EnvBinary(t, CollectorEnv)
}

// RepoFile returns the absolute path of a file given relative to the repository root.
func RepoFile(t testing.TB, rel string) string {
	t.Helper()
	return repo.Path(rel)
}

// JSONCaptures lists the real Pi 1.6.0 json-mode captures, the streams a replay reads (the rpc-*
// ones are RPC transcripts, not replayable streams). None fails t.
func JSONCaptures(t testing.TB) []string {
	t.Helper()
	paths, err := filepath.Glob(RepoFile(t, "testdata/captures/pi-1.6.0/*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		if !strings.HasPrefix(filepath.Base(p), "rpc-") {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("no captures in testdata/captures/pi-1.6.0")
	}
	return out
}

// Process is a running collector.
type Process struct {
	Name string
	Opts Options // what it was started with, for a restart on the same ports
	cmd  *exec.Cmd
	logs *proc.Buffer
	done chan struct{}
}

// Logs returns everything the process wrote so far.
func (p *Process) Logs() string { return p.logs.String() }

// Options describes one collector to start.
type Options struct {
	Name     string            // for messages
	Config   string            // path of the config file
	Overlays []string          // further config files merged over Config, in order
	Env      map[string]string // variables the config substitutes
	Health   string            // host:port of its health endpoint (GET /status)
	Args     []string          // extra command-line arguments
}

// GatewayArgs are the command-line arguments the gateway runs with, in tests and in
// docker-compose.yml (checked there).
var GatewayArgs = []string{"--feature-gates=connector.spanmetrics.excludeResourceMetrics"}

// Start runs the collector with opts, waits until its health endpoint answers 200 and stops it
// when the test ends.
func Start(t testing.TB, opts Options) *Process {
	t.Helper()
	p, err := tryStart(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// StartFresh is Start for options holding ports from freeport.Addr: another process may take such a
// port between freeport.Addr and the collector binding it, so when the collector exits with "address
// already in use", build is called again for fresh ports (up to three attempts).
func StartFresh(t testing.TB, build func() Options) *Process {
	t.Helper()
	var err error
	for range 3 {
		var p *Process
		if p, err = tryStart(t, build()); err == nil {
			return p
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	t.Fatal(err)
	return nil
}

var errPortTaken = errors.New("a port was taken by another process")

func tryStart(t testing.TB, opts Options) (*Process, error) {
	t.Helper()
	args := []string{"--config=file:" + opts.Config}
	for _, o := range opts.Overlays {
		args = append(args, "--config=file:"+o)
	}
	cmd := exec.Command(Binary(t), append(args, opts.Args...)...)
	cmd.Env = append(os.Environ(), envList(opts.Env)...)
	logs := &proc.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", opts.Name, err)
	}
	p := &Process{Name: opts.Name, Opts: opts, cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.Stop(t) })

	url := "http://" + opts.Health + "/status"
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-p.done:
			if strings.Contains(p.Logs(), "address already in use") {
				return nil, fmt.Errorf("%s: %w:\n%s", opts.Name, errPortTaken, p.Logs())
			}
			return nil, fmt.Errorf("%s exited before becoming healthy:\n%s", opts.Name, p.Logs())
		default:
		}
		if ok, _ := get200(url); ok {
			return p, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s not healthy at %s after %s:\n%s", opts.Name, url, readyTimeout, p.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop ends the process gracefully (SIGTERM, which flushes its exporters) and waits for it, at
// most 30 s.
func (p *Process) Stop(t testing.TB) { p.StopWithin(t, 30*time.Second) }

// StopWithin is Stop with its own limit, for a collector that drains a queue towards a dead
// backend while it stops: each request it hands on retries until its own deadline first.
func (p *Process) StopWithin(t testing.TB, limit time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s ignored SIGTERM for %v:\n%s", p.Name, limit, p.Logs())
	}
}

// Kill ends the process with SIGKILL, as a crash or an OOM kill would: no flush, no shutdown.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s had already exited:\n%s", p.Name, p.Logs())
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Restart starts the process again with the options it had (same ports, same files). Only for a
// process that has exited.
func (p *Process) Restart(t testing.TB) *Process {
	t.Helper()
	return Start(t, p.Opts)
}

// Validate runs `validate` of the collector binary bin (pi-otel-collector or Jaeger) on config
// (merged with overlays) with env; it returns the output on failure.
func Validate(t testing.TB, bin, config string, env map[string]string, overlays ...string) error {
	t.Helper()
	args := []string{"validate", "--config=file:" + config}
	for _, o := range overlays {
		args = append(args, "--config=file:"+o)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), envList(env)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v:\n%s", err, out)
	}
	return nil
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

func get200(url string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// Eventually polls cond until it returns true or the deadline passes, then fails with msg().
// Pipelines are asynchronous (batching, flush intervals); this waits for data, it does not time it.
func Eventually(t testing.TB, within time.Duration, cond func() bool, msg func() string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", within, msg())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stack is agent → gateways → two trace backends, all real processes on loopback: Jaeger and a
// second Jaeger standing in for Tempo (Tempo is not available here), so both exporters are live.
// The Gateway* fields describe the first gateway; Gateways lists them all.
type Stack struct {
	AgentOTLP        string // OTLP/gRPC into the agent
	AgentOTLPHTTP    string
	AgentTelemetry   string // the agent's own metrics, host:port
	AgentQueueDir    string // the agent's persistent sending queue
	GatewayOTLP      string // OTLP/gRPC into the first gateway
	GatewayOTLPHTTP  string
	GatewayMetrics   string // the first gateway's prometheus exporter, host:port
	GatewayTelemetry string // the first gateway's own metrics, host:port
	Jaeger, Tempo    *jaegertest.Jaeger
	Agent, Gateway   *Process
	Gateways         []*Gateway
}

// Gateway is one running gateway and its addresses.
type Gateway struct {
	OTLP, OTLPHTTP string
	Metrics        string // prometheus exporter, host:port
	Telemetry      string // own metrics, host:port
	Jaeger, Tempo  *jaegertest.Jaeger
	Proc           *Process
}

// StackOptions tunes the stack for a test.
type StackOptions struct {
	SamplePercentage string // baseline probabilistic sampling, "0" to keep only interesting traces
	DecisionWait     string // tail sampling decision_wait
	SpanmetricsFlush string // spanmetrics flush interval
	NoAgent          bool   // send straight to the gateway
	Gateways         int    // how many gateways the agent routes to (default 1)
	// BackendPerGateway gives each gateway its own Jaeger and Tempo stand-in, so a test can tell
	// which gateway exported what; Stack.Jaeger and Stack.Tempo are then the first gateway's.
	BackendPerGateway bool
	// GatewayOverlays are config files merged over collector/gateway.yaml; GatewayEnv is called
	// with each gateway's index for variables they read.
	GatewayOverlays []string
	GatewayEnv      func(i int) map[string]string
	// AgentEnv adds or overrides agent variables (e.g. PI_OTEL_AGENT_GATEWAY_RETRY).
	AgentEnv map[string]string
	// AgentQueueDir is the agent's queue directory; a fresh temporary one when empty.
	AgentQueueDir string
}

// StartStack starts the backends, the gateways and (unless NoAgent) the agent, from the shipped
// config files.
func StartStack(t testing.TB, o StackOptions) *Stack {
	t.Helper()
	if o.SamplePercentage == "" {
		o.SamplePercentage = "0"
	}
	if o.DecisionWait == "" {
		o.DecisionWait = "1s"
	}
	if o.SpanmetricsFlush == "" {
		o.SpanmetricsFlush = "1s"
	}
	if o.Gateways == 0 {
		o.Gateways = 1
	}
	s := &Stack{}
	var shared [2]*jaegertest.Jaeger
	for i := range o.Gateways {
		g := &Gateway{}
		if i == 0 || o.BackendPerGateway {
			shared = [2]*jaegertest.Jaeger{
				jaegertest.Start(t, jaegertest.WithName(fmt.Sprintf("jaeger-%d", i+1))),
				jaegertest.Start(t, jaegertest.WithName(fmt.Sprintf("tempo-standin-%d", i+1))),
			}
		}
		g.Jaeger, g.Tempo = shared[0], shared[1]
		name := "gateway"
		if o.Gateways > 1 {
			name = fmt.Sprintf("gateway-%d", i+1)
		}
		g.Proc = StartFresh(t, func() Options {
			g.OTLP, g.OTLPHTTP = freeport.Addr(t), freeport.Addr(t)
			g.Metrics, g.Telemetry = freeport.Addr(t), freeport.Addr(t)
			health := freeport.Addr(t)
			env := map[string]string{
				"PI_OTEL_GATEWAY_HEALTH":         health,
				"PI_OTEL_GATEWAY_OTLP_GRPC":      g.OTLP,
				"PI_OTEL_GATEWAY_OTLP_HTTP":      g.OTLPHTTP,
				"PI_OTEL_GATEWAY_PROMETHEUS":     g.Metrics,
				"PI_OTEL_GATEWAY_TELEMETRY_HOST": "127.0.0.1",
				"PI_OTEL_GATEWAY_TELEMETRY_PORT": freeport.Port(g.Telemetry),
				"PI_OTEL_GATEWAY_BATCH_TIMEOUT":  "200ms",
				"PI_OTEL_JAEGER_ENDPOINT":        g.Jaeger.OTLPGRPC,
				"PI_OTEL_TEMPO_ENDPOINT":         g.Tempo.OTLPGRPC,
				"PI_OTEL_SAMPLE_PERCENTAGE":      o.SamplePercentage,
				"PI_OTEL_TAIL_DECISION_WAIT":     o.DecisionWait,
				"PI_OTEL_SPANMETRICS_FLUSH":      o.SpanmetricsFlush,
			}
			if o.GatewayEnv != nil {
				for k, v := range o.GatewayEnv(i) {
					env[k] = v
				}
			}
			return Options{
				Name:     name,
				Config:   RepoFile(t, "collector/gateway.yaml"),
				Overlays: o.GatewayOverlays,
				Health:   health,
				Args:     GatewayArgs,
				Env:      env,
			}
		})
		s.Gateways = append(s.Gateways, g)
	}
	g0 := s.Gateways[0]
	s.GatewayOTLP, s.GatewayOTLPHTTP, s.GatewayMetrics, s.GatewayTelemetry = g0.OTLP, g0.OTLPHTTP, g0.Metrics, g0.Telemetry
	s.Jaeger, s.Tempo, s.Gateway = g0.Jaeger, g0.Tempo, g0.Proc
	if o.NoAgent {
		return s
	}
	s.AgentQueueDir = o.AgentQueueDir
	if s.AgentQueueDir == "" {
		s.AgentQueueDir = t.TempDir()
	}
	s.Agent = StartFresh(t, func() Options {
		s.AgentOTLP, s.AgentOTLPHTTP, s.AgentTelemetry = freeport.Addr(t), freeport.Addr(t), freeport.Addr(t)
		health := freeport.Addr(t)
		env := map[string]string{
			"PI_OTEL_AGENT_HEALTH":         health,
			"PI_OTEL_AGENT_OTLP_GRPC":      s.AgentOTLP,
			"PI_OTEL_AGENT_OTLP_HTTP":      s.AgentOTLPHTTP,
			"PI_OTEL_AGENT_TELEMETRY_HOST": "127.0.0.1",
			"PI_OTEL_AGENT_TELEMETRY_PORT": freeport.Port(s.AgentTelemetry),
			"PI_OTEL_AGENT_BATCH_TIMEOUT":  "200ms",
			"PI_OTEL_AGENT_QUEUE_DIR":      s.AgentQueueDir,
			"PI_OTEL_GATEWAYS":             s.GatewayList(),
		}
		for k, v := range o.AgentEnv {
			env[k] = v
		}
		return Options{
			Name:   "agent",
			Config: RepoFile(t, "collector/agent.yaml"),
			Health: health,
			Env:    env,
		}
	})
	return s
}

// GatewayList is the gateways' OTLP/gRPC addresses as the YAML list the agent's static resolver
// reads from PI_OTEL_GATEWAYS.
func (s *Stack) GatewayList() string {
	var addrs []string
	for _, g := range s.Gateways {
		addrs = append(addrs, g.OTLP)
	}
	return "[" + strings.Join(addrs, ", ") + "]"
}

// Get fetches url and returns the status code and body.
func Get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, buf.Bytes()
}

// PiOtel returns $PI_OTEL_BIN or a pi-otel built from this module into a temporary directory.
func PiOtel(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("PI_OTEL_BIN"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("PI_OTEL_BIN=%s: %v", bin, err)
		}
		return bin
	}
	return proc.MustBuild(t, t.TempDir(), "./cmd/pi-otel")
}

// ExportEnv is the environment of one pi-otel process: base minus anything that would change
// pi-otel's settings (OTEL_*, PI_OTEL_*, a caller's trace context), plus OTLP to endpoint over
// protocol ("grpc" or "http/protobuf") and no spool.
func ExportEnv(base []string, endpoint, protocol string) []string {
	out := base[:0:0]
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || strings.HasPrefix(k, "PI_OTEL_") || k == "TRACEPARENT" || k == "TRACESTATE" {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL="+protocol, "PI_OTEL_SPOOL_DIR=none")
}

// Replayed is what one `pi-otel replay` process reported on exit.
type Replayed struct {
	File string
	summaryline.Summary
	Failed  int    // spans pi-otel reported as not delivered ("failed to export", "dropped")
	Trouble string // the summary line, when it reports any export trouble
	Stderr  []byte
}

var failedRE = regexp.MustCompile(`(\d+) (?:failed to export|spans? dropped)`)

// replayGuard bounds one replay so a hang fails instead of timing the package out.
const replayGuard = 2 * time.Minute

// Replay runs `pi-otel replay --traces-exporter otlp --metrics-exporter otlp FILE` exporting to
// endpoint over protocol ("grpc" or "http/protobuf"), with env added to ExportEnv's, and parses its
// exit summary. It returns an error instead of failing, so replays can run on many goroutines.
// Export trouble is not an error: it is in Trouble and Failed, for the caller to judge.
func Replay(bin, file, endpoint, protocol string, env ...string) (Replayed, error) {
	ctx, cancel := context.WithTimeout(context.Background(), replayGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "replay", "--traces-exporter", "otlp", "--metrics-exporter", "otlp", file)
	cmd.Env = append(ExportEnv(os.Environ(), endpoint, protocol), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	r := Replayed{File: file, Stderr: stderr.Bytes()}
	if ctx.Err() != nil {
		return r, fmt.Errorf("replay %s: still running after %v:\n%s", file, replayGuard, stderr.Bytes())
	}
	if err != nil {
		return r, fmt.Errorf("replay %s: %v:\n%s", file, err, stderr.Bytes())
	}
	var ok bool
	if r.Summary, ok = summaryline.Parse(stderr.Bytes()); !ok {
		return r, fmt.Errorf("replay %s: no summary line:\n%s", file, stderr.Bytes())
	}
	if r.Summary.Trouble() {
		r.Trouble = r.Line
		for _, f := range failedRE.FindAllStringSubmatch(r.Dest, -1) {
			n, _ := strconv.Atoi(f[1])
			r.Failed += n
		}
	}
	return r, nil
}
