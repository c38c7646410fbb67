// Package jaegertest runs a real Jaeger v2 on the shipped
// collector/jaeger.yaml, for the end-to-end tests and as the collector
// suites' trace backends, and reads back what it stored, so tests assert on
// traces as a user would see them.
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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// EnvJaeger names the Jaeger v2 binary.
const EnvJaeger = "PI_OTEL_JAEGER"

// Jaeger is one running Jaeger v2 with in-memory storage, every endpoint on
// 127.0.0.1.
type Jaeger struct {
	// Name tells this Jaeger from others in messages ("jaeger" unless set).
	Name string
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
	name    string
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

// WithName names this Jaeger in messages, for a test that runs several.
func WithName(name string) Option {
	return option.Func[options](func(o *options) { o.name = name })
}

// Binary returns $PI_OTEL_JAEGER, failing tb when it is missing.
func Binary(tb testing.TB) string {
	tb.Helper()
	return proc.EnvBinary(tb, EnvJaeger)
}

// Start runs Jaeger on the shipped collector/jaeger.yaml, every endpoint
// bound to a free loopback port, waits until it reports healthy and stops
// it (waiting for the process) on tb's cleanup. Failures end the test.
func Start(tb testing.TB, opts ...Option) *Jaeger {
	tb.Helper()
	o := option.Apply(options{timeout: 60 * time.Second, name: "jaeger"}, opts)
	if o.binary == "" {
		o.binary = Binary(tb)
	}
	// A port picked free may be taken before Jaeger binds it: try again
	// with fresh ones (three attempts in all).
	var err error
	for range 3 {
		var j *Jaeger
		j, err = start(freeport.Addrs(tb, 6), o)
		if j != nil {
			tb.Cleanup(func() {
				j.Stop()
				if tb.Failed() {
					tb.Logf("%s log:\n%s", j.Name, j.Log())
				}
			})
		}
		if err == nil {
			return j
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	tb.Fatal(err)
	return nil
}

var errPortTaken = errors.New("a port was taken by another process")

func start(ports []string, o options) (*Jaeger, error) {
	otlp := ports[0]
	if o.otlp != "" {
		otlp = o.otlp
	}
	j := &Jaeger{
		Name:      o.name,
		OTLPGRPC:  otlp,
		OTLPHTTP:  "http://" + ports[1],
		QueryURL:  "http://" + ports[2],
		HealthURL: "http://" + ports[4] + "/status",
		done:      make(chan struct{}),
		client:    &http.Client{Timeout: 10 * time.Second},
	}
	j.cmd = exec.Command(o.binary, "--config=file:"+repo.Path("collector/jaeger.yaml"))
	j.cmd.Env = append(os.Environ(),
		"PI_OTEL_JAEGER_OTLP_GRPC="+otlp,
		"PI_OTEL_JAEGER_OTLP_HTTP="+ports[1],
		"PI_OTEL_JAEGER_QUERY_HTTP="+ports[2],
		"PI_OTEL_JAEGER_QUERY_GRPC="+ports[3],
		"PI_OTEL_JAEGER_HEALTH="+ports[4],
		"PI_OTEL_JAEGER_TELEMETRY_HOST=127.0.0.1",
		"PI_OTEL_JAEGER_TELEMETRY_PORT="+freeport.Port(ports[5]),
	)
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
		if strings.Contains(j.Log(), "address already in use") {
			err = fmt.Errorf("%s: %w: %v", j.Name, errPortTaken, err)
		}
		return j, fmt.Errorf("%w\n%s log:\n%s", err, j.Name, j.Log())
	}
	return j, nil
}

func (j *Jaeger) waitHealthy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-j.done:
			return fmt.Errorf("jaegertest: %s exited before it was healthy (%v)", j.Name, j.cmd.ProcessState)
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
	return fmt.Errorf("jaegertest: %s not healthy after %v: %v", j.Name, timeout, last)
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
