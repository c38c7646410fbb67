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
	"net/http"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/otelcol"
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

	proc   *otelcol.Process
	client *http.Client
}

type options struct {
	binary string
	otlp   string
	name   string
}

// Option configures Start.
type Option = option.Option[options]

// WithOTLPGRPC binds the OTLP gRPC receiver to addr (127.0.0.1:PORT)
// instead of a free port, so a test can point pi-otel at a collector that
// is not running yet, or start a second Jaeger where a killed one was.
func WithOTLPGRPC(addr string) Option {
	return option.Func[options](func(o *options) { o.otlp = addr })
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
// it on tb's cleanup. Failures end the test.
func Start(tb testing.TB, opts ...Option) *Jaeger {
	tb.Helper()
	o := option.Apply(options{name: "jaeger"}, opts)
	if o.binary == "" {
		o.binary = Binary(tb)
	}
	j := &Jaeger{Name: o.name, client: &http.Client{Timeout: 10 * time.Second}}
	j.proc = otelcol.StartFresh(tb, func() otelcol.Options {
		ports := Ports(freeport.Addrs(tb, 6))
		if o.otlp != "" {
			ports.OTLPGRPC = o.otlp
		}
		j.OTLPGRPC, j.OTLPHTTP, j.QueryURL = ports.OTLPGRPC, "http://"+ports.OTLPHTTP, "http://"+ports.QueryHTTP
		return Options(o.name, o.binary, ports)
	})
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("%s log:\n%s", j.Name, j.Logs())
		}
	})
	return j
}

// PortSet is where a Jaeger listens: every endpoint, host:port.
type PortSet struct {
	OTLPGRPC, OTLPHTTP, QueryHTTP, QueryGRPC, Health, Telemetry string
}

// Ports is a PortSet of six addresses, in PortSet's order.
func Ports(addrs []string) PortSet {
	return PortSet{addrs[0], addrs[1], addrs[2], addrs[3], addrs[4], addrs[5]}
}

// Options runs binary on the shipped collector/jaeger.yaml at ports.
func Options(name, binary string, ports PortSet) otelcol.Options {
	return otelcol.Options{
		Name:   name,
		Binary: binary,
		Config: repo.Path("collector/jaeger.yaml"),
		Health: ports.Health,
		Env: map[string]string{
			"PI_OTEL_JAEGER_OTLP_GRPC":      ports.OTLPGRPC,
			"PI_OTEL_JAEGER_OTLP_HTTP":      ports.OTLPHTTP,
			"PI_OTEL_JAEGER_QUERY_HTTP":     ports.QueryHTTP,
			"PI_OTEL_JAEGER_QUERY_GRPC":     ports.QueryGRPC,
			"PI_OTEL_JAEGER_HEALTH":         ports.Health,
			"PI_OTEL_JAEGER_TELEMETRY_HOST": "127.0.0.1",
			"PI_OTEL_JAEGER_TELEMETRY_PORT": freeport.Port(ports.Telemetry),
		},
	}
}

// Stop ends Jaeger gracefully and waits for it; it is safe to call twice.
func (j *Jaeger) Stop(tb testing.TB) { j.proc.Stop(tb) }

// Kill ends Jaeger with SIGKILL, as a crash would, and waits for it: what
// it stored is gone and its ports refuse connections.
func (j *Jaeger) Kill(tb testing.TB) { j.proc.Kill(tb) }

// Logs is what Jaeger wrote to stdout and stderr so far.
func (j *Jaeger) Logs() string { return j.proc.Logs() }

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
