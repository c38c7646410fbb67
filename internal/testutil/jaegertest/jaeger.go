// Package jaegertest runs a real Jaeger v2 for end-to-end tests and reads
// back what it stored, so tests assert on traces as a user would see them.
//
// The binary comes from $PI_OTEL_JAEGER (scripts/deps.sh builds it). When it
// is missing the test fails: skipping would let a claim go unchecked.
package jaegertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
)

// EnvJaeger names the Jaeger v2 binary.
const EnvJaeger = "PI_OTEL_JAEGER"

// Jaeger is one running Jaeger v2 with in-memory storage, every endpoint on
// 127.0.0.1.
type Jaeger struct {
	// OTLPGRPC is host:port of the OTLP gRPC receiver (no scheme).
	OTLPGRPC string
	// OTLPHTTP is the OTLP HTTP receiver base URL, e.g. http://127.0.0.1:P
	// (traces go to OTLPHTTP+"/v1/traces").
	OTLPHTTP string
	// QueryURL is the query service base URL, e.g. http://127.0.0.1:P.
	QueryURL string
	// HealthURL is the health check's status URL.
	HealthURL string

	cmd    *exec.Cmd
	done   chan struct{}
	log    proc.Buffer
	client *http.Client
}

type options struct {
	binary  string
	timeout time.Duration
	otlp    string
}

// Option configures Start.
type Option = option.Option[options]

// WithBinary uses path instead of $PI_OTEL_JAEGER.
func WithBinary(path string) Option {
	return option.Func[options](func(o *options) { o.binary = path })
}

// WithOTLPGRPC binds the OTLP gRPC receiver to addr (127.0.0.1:PORT)
// instead of a free port, so a test can point pi-otel at a collector that
// is not running yet, or start a second Jaeger where a killed one was.
func WithOTLPGRPC(addr string) Option {
	return option.Func[options](func(o *options) { o.otlp = addr })
}

// WithStartTimeout bounds the wait for a healthy status (default 60s): a
// guard against a hung binary, not a performance assertion.
func WithStartTimeout(d time.Duration) Option {
	return option.Func[options](func(o *options) { o.timeout = d })
}

// Start runs Jaeger, waits until it reports healthy and stops it (waiting
// for the process) on tb's cleanup. Failures end the test.
func Start(tb testing.TB, opts ...Option) *Jaeger {
	tb.Helper()
	o := option.Apply(options{timeout: 60 * time.Second}, opts)
	if o.binary == "" {
		o.binary = os.Getenv(EnvJaeger)
	}
	if o.binary == "" {
		tb.Fatalf("jaegertest: %s is not set; run `bash scripts/deps.sh` and `source \"${PI_OTEL_CACHE:-$HOME/.cache/pi-otel}/env.sh\"` (scripts/test.sh does both)", EnvJaeger)
	}
	if _, err := os.Stat(o.binary); err != nil {
		tb.Fatalf("jaegertest: %s=%s: %v; run `bash scripts/deps.sh`", EnvJaeger, o.binary, err)
	}
	j, err := start(tb.TempDir(), freeport.Addrs(tb, 5), o)
	if j != nil {
		tb.Cleanup(func() {
			j.Stop()
			if tb.Failed() {
				tb.Logf("jaeger log:\n%s", j.Log())
			}
		})
	}
	if err != nil {
		tb.Fatal(err)
	}
	return j
}

func start(dir string, ports []string, o options) (*Jaeger, error) {
	addr := func(i int) string {
		if i == 0 && o.otlp != "" {
			return o.otlp
		}
		return ports[i]
	}
	cfgPath := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfgPath, []byte(config(addr(0), addr(1), addr(2), addr(3), addr(4))), 0o644); err != nil {
		return nil, err
	}
	j := &Jaeger{
		OTLPGRPC:  addr(0),
		OTLPHTTP:  "http://" + addr(1),
		QueryURL:  "http://" + addr(2),
		HealthURL: "http://" + addr(4) + "/status",
		done:      make(chan struct{}),
		client:    &http.Client{Timeout: 10 * time.Second},
	}
	j.cmd = exec.Command(o.binary, "--config", cfgPath)
	j.cmd.Dir = dir
	j.cmd.Stdout = &j.log
	j.cmd.Stderr = &j.log
	// Pdeathsig: if the test binary dies without running cleanups (a panic
	// or a -timeout), Jaeger must not outlive it.
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := j.cmd.Start(); err != nil {
		return nil, fmt.Errorf("jaegertest: start %s: %w", o.binary, err)
	}
	go func() { _ = j.cmd.Wait(); close(j.done) }()
	if err := j.waitHealthy(o.timeout); err != nil {
		return j, fmt.Errorf("%w\njaeger log:\n%s", err, j.Log())
	}
	return j, nil
}

// config binds every listener Jaeger opens to loopback; its own telemetry
// exports nothing and opens no port.
func config(otlpGRPC, otlpHTTP, queryHTTP, queryGRPC, health string) string {
	return `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: ` + health + `
  jaeger_query:
    storage:
      traces: memstore
    enable_tracing: false
    http:
      endpoint: ` + queryHTTP + `
    grpc:
      endpoint: ` + queryGRPC + `
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: ` + otlpGRPC + `
      http:
        endpoint: ` + otlpHTTP + `
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`
}

func (j *Jaeger) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-j.done:
			return fmt.Errorf("jaegertest: jaeger exited before it was healthy (%v)", j.cmd.ProcessState)
		default:
		}
		resp, err := j.client.Get(j.HealthURL)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("status %s", resp.Status)
		} else {
			last = err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("jaegertest: not healthy after %v: %v", timeout, last)
}

// Stop terminates Jaeger and waits for it to exit; it is safe to call twice.
func (j *Jaeger) Stop() {
	if j.cmd == nil || j.cmd.Process == nil {
		return
	}
	select {
	case <-j.done:
		return
	default:
	}
	_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-j.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		<-j.done
	}
}

// Kill ends Jaeger with SIGKILL, as a crash would, and waits for it: what
// it stored is gone and its ports refuse connections.
func (j *Jaeger) Kill() {
	if j.cmd == nil || j.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
	<-j.done
}

// Log is what Jaeger wrote to stdout and stderr so far.
func (j *Jaeger) Log() string {
	return j.log.String()
}

// ErrNotFound is returned when Jaeger has no such trace (yet).
var ErrNotFound = errors.New("jaegertest: trace not found")

// pollContext returns ctx bounded by the default poll deadline when it has
// none.
func pollContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, 30*time.Second)
}
