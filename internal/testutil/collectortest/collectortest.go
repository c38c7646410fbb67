// Package collectortest starts real OpenTelemetry Collector processes (the Jaeger v2 binary, a
// Collector distribution) from the shipped configuration files, bound to loopback, for tests.
package collectortest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// BinaryEnv names the environment variable holding the collector binary.
const BinaryEnv = "PI_OTEL_JAEGER"

// readyTimeout bounds the wait for a health endpoint; it is a liveness guard, not an assertion.
const readyTimeout = 60 * time.Second

// Binary returns the collector binary named by PI_OTEL_JAEGER. The tests that use it are the
// proof that the shipped configs work, so a missing binary fails them instead of skipping.
func Binary(t testing.TB) string {
	t.Helper()
	p := os.Getenv(BinaryEnv)
	if p == "" {
		t.Fatalf("%s is not set: it must name the Jaeger v2 collector binary (scripts/deps.sh builds it)", BinaryEnv)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s=%s: %v", BinaryEnv, p, err)
	}
	return p
}

// RepoFile returns the absolute path of a file given relative to the repository root.
func RepoFile(t testing.TB, rel string) string {
	t.Helper()
	return repo.Path(rel)
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Port returns the port part of addr.
func Port(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}

// Process is a running collector.
type Process struct {
	Name string
	cmd  *exec.Cmd
	logs *proc.Buffer
	done chan struct{}
}

// Logs returns everything the process wrote so far.
func (p *Process) Logs() string { return p.logs.String() }

// Options describes one collector to start.
type Options struct {
	Name   string            // for messages
	Config string            // path of the config file
	Env    map[string]string // variables the config substitutes
	Health string            // host:port of its healthcheckv2 endpoint
	Args   []string          // extra command-line arguments
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

// StartFresh is Start for options holding ports from FreeAddr: another process may take such a
// port between FreeAddr and the collector binding it, so when the collector exits with "address
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
	bin := Binary(t)
	cmd := exec.Command(bin, append([]string{"--config=file:" + opts.Config}, opts.Args...)...)
	cmd.Env = append(os.Environ(), envList(opts.Env)...)
	logs := &proc.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", opts.Name, err)
	}
	p := &Process{Name: opts.Name, cmd: cmd, logs: logs, done: make(chan struct{})}
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

// Stop ends the process gracefully (SIGTERM, which flushes its exporters) and waits for it.
func (p *Process) Stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s ignored SIGTERM for 30s:\n%s", p.Name, p.Logs())
	}
}

// Validate runs `collector validate` on config with env; it returns the output on failure.
func Validate(t testing.TB, config string, env map[string]string) error {
	t.Helper()
	cmd := exec.Command(Binary(t), "validate", "--config=file:"+config)
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

// Backend is a Jaeger instance receiving the gateway's sampled traces.
type Backend struct {
	OTLP  string // OTLP/gRPC host:port
	Query string // query HTTP host:port
	Proc  *Process
}

// StartJaeger starts collector/jaeger.yaml on loopback.
func StartJaeger(t testing.TB, name string) *Backend {
	t.Helper()
	b := &Backend{}
	b.Proc = StartFresh(t, func() Options {
		b.OTLP, b.Query = FreeAddr(t), FreeAddr(t)
		health := FreeAddr(t)
		return Options{
			Name:   name,
			Config: RepoFile(t, "collector/jaeger.yaml"),
			Health: health,
			Env: map[string]string{
				"PI_OTEL_JAEGER_HEALTH":         health,
				"PI_OTEL_JAEGER_OTLP_GRPC":      b.OTLP,
				"PI_OTEL_JAEGER_OTLP_HTTP":      FreeAddr(t),
				"PI_OTEL_JAEGER_QUERY_HTTP":     b.Query,
				"PI_OTEL_JAEGER_QUERY_GRPC":     FreeAddr(t),
				"PI_OTEL_JAEGER_TELEMETRY_HOST": "127.0.0.1",
				"PI_OTEL_JAEGER_TELEMETRY_PORT": Port(FreeAddr(t)),
			},
		}
	})
	return b
}

// Stack is agent → gateway → two trace backends, all real processes on loopback. Jaeger and a
// second Jaeger standing in for Tempo (Tempo is not available here), so both exporters are live.
type Stack struct {
	AgentOTLP        string // OTLP/gRPC into the agent
	AgentOTLPHTTP    string
	GatewayOTLP      string // OTLP/gRPC into the gateway
	GatewayOTLPHTTP  string
	GatewayMetrics   string // the gateway's prometheus exporter, host:port
	GatewayTelemetry string // the gateway's own metrics, host:port
	Jaeger, Tempo    *Backend
	Agent, Gateway   *Process
}

// StackOptions tunes the gateway for a test.
type StackOptions struct {
	SamplePercentage string // baseline probabilistic sampling, "0" to keep only interesting traces
	DecisionWait     string // tail sampling decision_wait
	SpanmetricsFlush string // spanmetrics flush interval
	NoAgent          bool   // send straight to the gateway
}

// StartStack starts the backends, the gateway and (unless NoAgent) the agent, from the shipped
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
	s := &Stack{Jaeger: StartJaeger(t, "jaeger"), Tempo: StartJaeger(t, "tempo-standin")}
	s.Gateway = StartFresh(t, func() Options {
		s.GatewayOTLP, s.GatewayOTLPHTTP = FreeAddr(t), FreeAddr(t)
		s.GatewayMetrics, s.GatewayTelemetry = FreeAddr(t), FreeAddr(t)
		health := FreeAddr(t)
		return Options{
			Name:   "gateway",
			Config: RepoFile(t, "collector/gateway.yaml"),
			Health: health,
			Args:   GatewayArgs,
			Env: map[string]string{
				"PI_OTEL_GATEWAY_HEALTH":         health,
				"PI_OTEL_GATEWAY_OTLP_GRPC":      s.GatewayOTLP,
				"PI_OTEL_GATEWAY_OTLP_HTTP":      s.GatewayOTLPHTTP,
				"PI_OTEL_GATEWAY_PROMETHEUS":     s.GatewayMetrics,
				"PI_OTEL_GATEWAY_TELEMETRY_HOST": "127.0.0.1",
				"PI_OTEL_GATEWAY_TELEMETRY_PORT": Port(s.GatewayTelemetry),
				"PI_OTEL_GATEWAY_BATCH_TIMEOUT":  "200ms",
				"PI_OTEL_JAEGER_ENDPOINT":        s.Jaeger.OTLP,
				"PI_OTEL_TEMPO_ENDPOINT":         s.Tempo.OTLP,
				"PI_OTEL_SAMPLE_PERCENTAGE":      o.SamplePercentage,
				"PI_OTEL_TAIL_DECISION_WAIT":     o.DecisionWait,
				"PI_OTEL_SPANMETRICS_FLUSH":      o.SpanmetricsFlush,
			},
		}
	})
	if o.NoAgent {
		return s
	}
	s.Agent = StartFresh(t, func() Options {
		s.AgentOTLP, s.AgentOTLPHTTP = FreeAddr(t), FreeAddr(t)
		health := FreeAddr(t)
		return Options{
			Name:   "agent",
			Config: RepoFile(t, "collector/agent.yaml"),
			Health: health,
			Env: map[string]string{
				"PI_OTEL_AGENT_HEALTH":         health,
				"PI_OTEL_AGENT_OTLP_GRPC":      s.AgentOTLP,
				"PI_OTEL_AGENT_OTLP_HTTP":      s.AgentOTLPHTTP,
				"PI_OTEL_AGENT_TELEMETRY_HOST": "127.0.0.1",
				"PI_OTEL_AGENT_TELEMETRY_PORT": Port(FreeAddr(t)),
				"PI_OTEL_AGENT_BATCH_TIMEOUT":  "200ms",
				"PI_OTEL_GATEWAY_ENDPOINT":     s.GatewayOTLP,
			},
		}
	})
	return s
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
