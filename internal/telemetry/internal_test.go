package telemetry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// gateExporter blocks every export until its gate opens, and can fail them.
type gateExporter struct {
	gate    chan struct{}
	entered chan struct{} // gets a value each time an export starts
	fail    error

	mu       sync.Mutex
	exported int
	calls    int
	stopped  bool
}

func newGate() *gateExporter {
	return &gateExporter{gate: make(chan struct{}), entered: make(chan struct{}, 100)}
}

func (g *gateExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	if g.fail != nil {
		return g.fail
	}
	g.mu.Lock()
	g.exported += len(spans)
	g.mu.Unlock()
	return nil
}

func (g *gateExporter) Shutdown(context.Context) error {
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	return nil
}

func endSpans(tp *sdktrace.TracerProvider, n int) {
	tr := tp.Tracer("t")
	for range n {
		_, s := tr.Start(context.Background(), "s")
		s.End()
	}
}

func testBatch() Batch {
	return Batch{MaxQueueSize: 4, MaxExportBatchSize: 2, ScheduleDelay: time.Hour, ExportTimeout: time.Hour}
}

func TestSpanQueueDropsWhenFullAndCounts(t *testing.T) {
	g := newGate()
	c := newCounters()
	b := newSpanQueue(g, testBatch(), c, nil, nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))

	// Two spans fill a batch, whose export then blocks at the gate.
	endSpans(tp, 2)
	<-g.entered
	// The queue takes four more; the rest are dropped, without blocking.
	endSpans(tp, 10)
	if s, _ := c.snapshot(); s.Ended != 12 || s.Dropped != 6 || s.Pending() != 6 {
		t.Errorf("while blocked: %+v (pending %d)", s, s.Pending())
	}
	close(g.gate)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.freeze(true)
	s, _ := c.snapshot()
	if s != (Stats{Traces: 12, Ended: 12, Exported: 6, Dropped: 6}) {
		t.Errorf("after shutdown: %+v", s)
	}
	if g.exported != 6 || !g.stopped {
		t.Errorf("exporter got %d spans, stopped %v", g.exported, g.stopped)
	}
	// Spans ending after Shutdown are not exported. (The SDK stops
	// calling processors once the provider is shut down, so call OnEnd
	// as a late caller racing Shutdown would.)
	tp2 := sdktrace.NewTracerProvider()
	_, late := tp2.Tracer("t").Start(context.Background(), "late")
	late.End()
	b.OnEnd(late.(sdktrace.ReadOnlySpan))
	if s2, _ := c.snapshot(); s2 != s {
		t.Errorf("frozen counts changed: %+v", s2)
	}
}

func TestSpanQueueShutdownTimeout(t *testing.T) {
	g := newGate() // never opens
	c := newCounters()
	b := newSpanQueue(g, testBatch(), c, nil, nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 5)
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the flush timeout has run out
	if err := b.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v", err)
	}
	c.freeze(true)
	s, _ := c.snapshot()
	if s.Ended != 5 || s.Exported != 0 || s.Failed+s.Dropped != 5 {
		t.Errorf("stats = %+v", s)
	}
	if !g.stopped {
		t.Error("exporter not shut down")
	}
}

func TestSpanQueueScheduleAndFlush(t *testing.T) {
	g := newGate()
	close(g.gate)
	c := newCounters()
	cfg := testBatch()
	cfg.MaxExportBatchSize = 100
	b := newSpanQueue(g, cfg, c, nil, nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 3)
	// The schedule delay is an hour, so only ForceFlush exports these.
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.snapshot(); s.Exported != 3 {
		t.Errorf("after ForceFlush: %+v", s)
	}

	// A short delay exports without being asked.
	g2 := newGate()
	close(g2.gate)
	cfg.ScheduleDelay = time.Millisecond
	c2 := newCounters()
	b2 := newSpanQueue(g2, cfg, c2, nil, nil)
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b2))
	endSpans(tp2, 1)
	<-g2.entered
	_ = tp2.Shutdown(context.Background())
	if s, _ := c2.snapshot(); s.Exported != 1 {
		t.Errorf("timer export: %+v", s)
	}
	_ = tp.Shutdown(context.Background())
}

func TestSpanQueueFailuresAndKick(t *testing.T) {
	g := newGate()
	g.fail = errors.New("boom")
	var got []error
	c := newCounters()
	b := newSpanQueue(g, testBatch(), c, func(err error) { got = append(got, err) }, nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 2)
	<-g.entered
	// A kick cancels the attempt in flight and tries again at once.
	b.exp.kick()
	<-g.entered
	close(g.gate)
	_ = tp.Shutdown(context.Background())
	s, _ := c.snapshot()
	if s.Failed != 2 || g.calls != 2 {
		t.Errorf("stats = %+v after %d calls", s, g.calls)
	}
	if len(got) != 1 || got[0].Error() != "boom" {
		t.Errorf("errors reported = %v", got)
	}
}

// TestExplain: each class from the typed errors that make it, as the real
// ones are built (TestFailureClasses gets them from real servers). Text
// alone decides nothing.
func TestExplain(t *testing.T) {
	d := destination{signal: "traces", host: "localhost:4317", target: "localhost:4317",
		hint: "set OTEL_EXPORTER_OTLP_ENDPOINT or use --traces-exporter console"}
	// rpc is a gRPC RPC that failed for want of a connection, for cause.
	rpc := func(code codes.Code, cause error) error {
		return &connError{rpc: status.Error(code, "connection error: desc = \""+cause.Error()+"\""), cause: cause}
	}
	dial := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	read := func(err error) error { return &net.OpError{Op: "read", Net: "tcp", Err: err} }
	tests := []struct {
		name        string
		err         error
		want        string
		unreachable bool
		futile      bool
	}{
		{"grpc refused", rpc(codes.Unavailable, dial(os.NewSyscallError("connect", syscall.ECONNREFUSED))),
			"no collector at localhost:4317 (connection refused); set OTEL_EXPORTER_OTLP_ENDPOINT or use --traces-exporter console", true, false},
		{"errno refused", &url.Error{Op: "Post", URL: "http://x", Err: syscall.ECONNREFUSED},
			"no collector at localhost:4317 (connection refused)", true, false},
		{"dns", dial(&net.DNSError{Err: "no such host", Name: "nope", IsNotFound: true}),
			"cannot resolve the collector host localhost:4317 (no such host)", true, false},
		{"dns timeout", dial(&net.DNSError{Err: "i/o timeout", Name: "nope", Server: "10.0.0.53:53", IsTimeout: true}),
			"cannot resolve the collector host localhost:4317 (lookup nope on 10.0.0.53:53: i/o timeout)", true, false},
		{"grpc no addresses", rpc(codes.Unavailable, errNoAddresses), "cannot resolve the collector host localhost:4317 (no such host)", true, false},
		{"grpc resolver error", rpc(codes.Unavailable, &resolveError{errors.New("dns: A record lookup error: timeout")}),
			"cannot resolve the collector host localhost:4317 (dns: A record lookup error: timeout)", true, false},
		{"unreachable", fmt.Errorf("wrap: %w", syscall.EHOSTUNREACH), "cannot reach the collector at localhost:4317", true, false},
		{"tls record", rpc(codes.Unavailable, &handshakeError{tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}),
			"TLS with the collector at localhost:4317 failed (tls: first record does not look like a TLS handshake)", false, true},
		{"tls unknown CA", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}},
			"TLS with the collector at localhost:4317 failed (x509: certificate signed by unknown authority)", false, true},
		{"tls alert received", fmt.Errorf("reading: %w", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}),
			"TLS with the collector at localhost:4317 failed (tls: certificate required)", false, true},
		{"handshake hung up", rpc(codes.Unavailable, &handshakeError{io.EOF}), "TLS with the collector at localhost:4317 failed (EOF)", false, true},
		{"wrong protocol", rpc(codes.Unavailable, fmt.Errorf("error reading server preface: %w", http2.ErrFrameTooLarge)),
			"does not speak this protocol", false, true},
		{"hung up on the preface", rpc(codes.Unavailable, fmt.Errorf("error reading server preface: %w", io.EOF)),
			"does not speak this protocol", false, true},
		{"not HTTP/1", &notHTTP1Error{errors.New(`net/http: HTTP/1.x transport connection broken: malformed HTTP response "\x00"`)},
			"does not speak this protocol", false, true},
		{"plaintext to TLS", &plainToTLSError{status: "400 Bad Request"},
			"the collector at localhost:4317 wants TLS (it answered plaintext HTTP with 400 Bad Request); use an https:// endpoint", false, true},
		{"silent handshake", rpc(codes.Unavailable, read(net.ErrClosed)), "accepts connections but does not answer", false, false},
		{"silent TLS handshake", rpc(codes.Unavailable, &handshakeError{context.DeadlineExceeded}), "accepts connections but does not answer", false, false},
		{"dial timeout", rpc(codes.Unavailable, dial(os.ErrDeadlineExceeded)), "did not answer in time", false, false},
		{"http 415", &httpStatusError{code: 415, status: "415 Unsupported Media Type"}, "does not speak this protocol", false, true},
		{"grpc unauthenticated", status.Error(codes.Unauthenticated, "bad token"),
			"the collector at localhost:4317 refused the traces (bad token); check --headers", false, false},
		{"http 403", &httpStatusError{code: 403, status: "403 Forbidden"}, "refused the traces (HTTP 403 Forbidden)", false, false},
		{"http 404", &httpStatusError{code: 404, status: "404 Not Found"}, "has no traces receiver there", false, false},
		{"deadline", context.DeadlineExceeded, "did not answer in time", false, false},
		{"bad header", &badHeaderError{key: "a b"}, `exporting traces to localhost:4317 failed: invalid header field name "a b"`, false, true},
		{"other", dial(&net.AddrError{Err: "x"}), "exporting traces to localhost:4317 failed: dial tcp: x", false, false},
		{"text alone", errors.New(`transport: Error while dialing: connect: connection refused; x509: tls: server preface`),
			"exporting traces to localhost:4317 failed: transport", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg, unreachable := explain(d, tt.err)
			if !strings.Contains(msg, tt.want) || unreachable != tt.unreachable || futile(tt.err) != tt.futile {
				t.Errorf("explain = %q, %v, futile %v; want %q, %v, %v", msg, unreachable, futile(tt.err), tt.want, tt.unreachable, tt.futile)
			}
		})
	}
	if !cancelled(status.Error(codes.Canceled, "x")) || !cancelled(fmt.Errorf("w: %w", context.Canceled)) || cancelled(context.DeadlineExceeded) {
		t.Error("cancelled misjudges")
	}
}

func TestReporterOnce(t *testing.T) {
	var b strings.Builder
	r := newReporter(&b, false)
	r.once("a", "first")
	r.once("a", "second")
	r.once("b", "third")
	if b.String() != "pi-otel: first\npi-otel: third\n" {
		t.Errorf("got %q", b.String())
	}
	var q strings.Builder
	quiet := newReporter(&q, true)
	quiet.once("a", "x")
	if q.Len() != 0 {
		t.Errorf("quiet wrote %q", q.String())
	}
}

func TestHandle(t *testing.T) {
	var b strings.Builder
	tel := &Pipeline{rep: newReporter(&b, false)}
	tel.Handle(context.Canceled)
	tel.Handle(errors.New("first"))
	tel.Handle(errors.New("second"))
	if b.String() != "pi-otel: telemetry error: first\n" {
		t.Errorf("got %q", b.String())
	}
	var c strings.Builder
	tel = &Pipeline{rep: newReporter(&c, false)}
	tel.rep.once("localhost:4317", "no collector")
	tel.Handle(errors.New("the same failure, again"))
	if c.String() != "pi-otel: no collector\n" {
		t.Errorf("got %q", c.String())
	}
}

func TestTemporality(t *testing.T) {
	kinds := []sdkmetric.InstrumentKind{
		sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindObservableCounter, sdkmetric.InstrumentKindHistogram,
		sdkmetric.InstrumentKindUpDownCounter, sdkmetric.InstrumentKindObservableUpDownCounter,
		sdkmetric.InstrumentKindGauge, sdkmetric.InstrumentKindObservableGauge,
	}
	D, C := metricdata.DeltaTemporality, metricdata.CumulativeTemporality
	want := map[Temporality][]metricdata.Temporality{
		TemporalityDelta:      {D, D, D, C, C, C, C},
		TemporalityLowMemory:  {D, C, D, C, C, C, C},
		TemporalityCumulative: {C, C, C, C, C, C, C},
	}
	for pref, w := range want {
		sel := temporalitySelector(pref)
		for i, k := range kinds {
			if got := sel(k); got != w[i] {
				t.Errorf("%s: %v -> %v, want %v", pref, k, got, w[i])
			}
		}
	}
}

// BenchmarkOnEndExporterStuck measures what ending a span costs the
// producer while the exporter is stuck (a collector that never answers):
// the queue fills, then every span is dropped without waiting.
func BenchmarkOnEndExporterStuck(b *testing.B) {
	g := newGate()
	c := newCounters()
	bt := newSpanQueue(g, Defaults().Batch, c, nil, nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bt))
	tr := tp.Tracer("bench")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, s := tr.Start(ctx, "s")
		s.End()
	}
	b.StopTimer()
	close(g.gate)
	_ = tp.Shutdown(ctx)
}

// TestRefused: only a refusal of the data itself counts as refused; a
// refusal of the client is fixed on the collector, and then goes through.
func TestRefused(t *testing.T) {
	bad := &httpStatusError{code: 400, status: "400 Bad Request"}
	for _, tt := range []struct {
		name             string
		err              error
		refused, nospool bool
	}{
		{"grpc invalid", status.Error(codes.InvalidArgument, "bad span"), true, true},
		{"http 400 through the client", &url.Error{Op: "Post", URL: "http://x/v1/traces", Err: bad}, true, true},
		{"grpc unauthenticated", status.Error(codes.Unauthenticated, "token"), false, true},
		{"http 401", &httpStatusError{code: 401, status: "401 Unauthorized"}, false, false},
		{"unavailable", status.Error(codes.Unavailable, "down"), false, false},
		{"deadline", context.DeadlineExceeded, false, false},
		{"nil", nil, false, false},
	} {
		if got := refused(tt.err); got != tt.refused {
			t.Errorf("%s: refused = %v, want %v", tt.name, got, tt.refused)
		}
		if got := permanent(tt.err); got != tt.nospool {
			t.Errorf("%s: permanent = %v, want %v", tt.name, got, tt.nospool)
		}
	}
}

// The SDK's global handler reaches the pipeline routed last, said once;
// a nil route routes nothing and does not panic.
func TestErrorRoute(t *testing.T) {
	var r ErrorRoute
	r.Handle(errors.New("before any pipeline")) // dropped
	var first, second strings.Builder
	r.Route(&Pipeline{rep: newReporter(&first, false)})
	r.Route(&Pipeline{rep: newReporter(&second, false)})
	r.Handle(errors.New("export failed"))
	if first.Len() != 0 || second.String() != "pi-otel: telemetry error: export failed\n" {
		t.Errorf("first %q, second %q", first.String(), second.String())
	}
	var none *ErrorRoute
	none.Route(&Pipeline{rep: newReporter(&first, false)})
}

// Validate takes a zero Config (Setup fills it in) and names every bad
// setting, as the Collector's Config.Validate does.
func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	bad := Config{Traces: Signal{Exporter: "carrier-pigeon"}, Logs: Signal{Exporter: ExporterFile},
		Metrics: Signal{OTLP: OTLP{Protocol: "smtp"}}, Temporality: "sometimes", Batch: Batch{MaxQueueSize: -1}}
	err := bad.Validate()
	for _, want := range []string{`unknown exporter "carrier-pigeon"`, "the file exporter needs a file",
		`unknown OTLP protocol "smtp"`, `unknown metrics temporality "sometimes"`, "negative batch setting"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	if _, err := Setup(context.Background(), bad); err == nil {
		t.Error("Setup took a Config Validate refuses")
	}
}
