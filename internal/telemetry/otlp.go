package telemetry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// watch sees every attempt of an OTLP exporter, the exporter's own retries
// included, which the span queue never sees: that is how the first failure is
// reported at once instead of after a minute of retries, and how Shutdown
// learns that waiting for the collector is pointless.
type watch struct {
	dest destination
	rep  *reporter

	mu      sync.Mutex
	down    bool   // the last attempt could not reach the collector
	failed  bool   // some attempt failed, and that was reported
	exiting bool   // Shutdown has begun
	onDown  func() // called when an attempt during Shutdown finds no collector
	conn    *grpc.ClientConn
	cause   error // gRPC: why the connection fails now, nil while it is up (see withCause)
}

func (w *watch) observe(err error) {
	if err == nil {
		w.mu.Lock()
		w.down = false
		w.mu.Unlock()
		return
	}
	if cancelled(err) {
		return
	}
	msg, unreachable := explain(w.dest, err)
	w.rep.once(w.dest.host, msg)
	w.mu.Lock()
	w.failed = true
	w.down = unreachable
	var f func()
	if w.exiting && unreachable {
		f = w.onDown
	}
	w.mu.Unlock()
	if f != nil {
		f()
	}
}

// hasFailed reports whether a failure was seen, and so already reported.
func (w *watch) hasFailed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// isDown reports whether the last attempt could not reach the collector.
func (w *watch) isDown() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.down
}

// beginShutdown arms onDown and reports whether the collector was
// unreachable at the last attempt.
func (w *watch) beginShutdown(onDown func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.exiting, w.onDown = true, onDown
	return w.down
}

// reconnect is for Shutdown, when the last attempt found no collector.
// gRPC retries a failed connection only when its backoff ends, seconds
// later, and fails every call until then; so if something listens at the
// collector's address again, it has gRPC connect now and waits for that,
// within ctx and a second, so that the final flush reaches a collector
// that came back shortly before exit. It returns at once when the
// address still refuses connections.
func (w *watch) reconnect(ctx context.Context) {
	w.mu.Lock()
	cc := w.conn
	w.mu.Unlock()
	if cc == nil || cc.GetState() != connectivity.TransientFailure {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", w.dest.host)
	if err != nil {
		return
	}
	_ = c.Close()
	cc.ResetConnectBackoff()
	for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
		if !cc.WaitForStateChange(ctx, s) {
			return
		}
	}
}

func (w *watch) interceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption,
) error {
	w.mu.Lock()
	w.conn = cc
	w.mu.Unlock()
	err := w.withCause(invoker(ctx, method, req, reply, cc, opts...))
	if err != nil && ctx.Err() == nil && classify(err) == silent && cc.GetState() == connectivity.TransientFailure {
		// gRPC gave up on a collector that accepted and never answered,
		// and fails every call until its backoff ends; it may answer now
		// (continued after SIGSTOP, a proxy that forwards again). Connect
		// at once and wait for it within this call's deadline, so a new
		// batch goes through instead of to the spool.
		cc.ResetConnectBackoff()
		err = w.withCause(invoker(ctx, method, req, reply, cc, append(opts, grpc.WaitForReady(true))...))
	}
	w.observe(err)
	if err != nil && futile(err) {
		// The exporter retries Unavailable for a minute; a TLS or protocol
		// mismatch will not heal, so it fails now, and its spans count as
		// failed (or spooled) instead of waiting out the flush timeout.
		var cause error
		if ce, ok := errors.AsType[*connError](err); ok {
			cause = ce.cause
		}
		return &connError{rpc: status.Error(codes.FailedPrecondition, futileReason(err)), cause: cause}
	}
	return err
}

// futileReason is the short reason a futile gRPC export fails with.
func futileReason(err error) string {
	if classify(err) == tlsFailed {
		return tlsReason(err)
	}
	return lastPart(err.Error())
}

// Retry tunes the OTLP exporters' retry with exponential backoff.
type Retry struct {
	InitialInterval time.Duration
	MaxInterval     time.Duration
	MaxElapsedTime  time.Duration
}

// defaultRetry is the OTLP exporters' own default.
var defaultRetry = Retry{InitialInterval: 5 * time.Second, MaxInterval: 30 * time.Second, MaxElapsedTime: time.Minute}

// retainPause spaces the attempts at a batch kept while the collector is
// unreachable (see retainWhile); each attempt runs the exporter's own
// backoff first.
const retainPause = time.Second

// reconnect caps gRPC's reconnection backoff, 120s by default: after a long
// outage a collector that is back is found within seconds, while pi-otel
// still runs, and not minutes later.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second},
	MinConnectTimeout: 20 * time.Second,
}

// tlsConfig builds the client TLS settings, or nil for a plaintext endpoint.
func tlsConfig(o OTLP) (*tls.Config, error) {
	if o.Insecure() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.Certificate != "" {
		pem, err := os.ReadFile(o.Certificate)
		if err != nil {
			return nil, fmt.Errorf("reading the CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no PEM certificate in %s", o.Certificate)
		}
		c.RootCAs = pool
	}
	if o.ClientCertificate != "" {
		cert, err := tls.LoadX509KeyPair(o.ClientCertificate, o.ClientKey)
		if err != nil {
			return nil, fmt.Errorf("loading the client certificate %s and key %s: %w", o.ClientCertificate, o.ClientKey, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// grpcCreds always returns explicit credentials: the exporters also read
// OTEL_EXPORTER_OTLP_* from the process environment, and explicit options
// are how config's answer wins over that second reading.
func grpcCreds(o OTLP) (credentials.TransportCredentials, error) {
	tc, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	if tc == nil {
		return insecure.NewCredentials(), nil
	}
	return credentials.NewTLS(tc), nil
}

func httpClient(o OTLP, w *watch) (*http.Client, error) {
	tc, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tc
	plain := tc == nil
	if plain {
		base.DialContext = replyConns(base.DialContext)
	}
	return &http.Client{Transport: watchedTransport{base: base, w: w, plain: plain, proxy: base.Proxy}, Timeout: o.Timeout}, nil
}

func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	return u.Host
}

func headers(o OTLP) map[string]string {
	if o.Headers == nil {
		return map[string]string{}
	}
	return o.Headers
}

// exportSettings are the decisions about one signal's OTLP exporter:
// endpoint, transport security, headers, compression, timeout, retry. They
// are made here once for traces, metrics and logs alike; each signal's
// exporter package only spells them in its own option types (httpOptions,
// grpcOptions).
type exportSettings struct {
	http     bool                             // http/protobuf, else grpc
	endpoint string                           // the URL, for http/protobuf
	host     string                           // host:port, for grpc
	client   *http.Client                     // for http/protobuf: TLS and the watch
	creds    credentials.TransportCredentials // for grpc
	dial     []grpc.DialOption                // for grpc: the watch, its balancer and the reconnection backoff
	headers  map[string]string
	timeout  time.Duration
	gzip     bool
	retry    sdkRetry
}

func newExportSettings(o OTLP, r Retry, w *watch) (exportSettings, error) {
	s := exportSettings{
		http:     o.Protocol == ProtocolHTTPProtobuf,
		endpoint: o.Endpoint,
		host:     hostOf(o.Endpoint),
		headers:  headers(o),
		timeout:  o.Timeout,
		gzip:     o.Compression == "gzip",
		retry: sdkRetry{Enabled: true,
			InitialInterval: r.InitialInterval, MaxInterval: r.MaxInterval, MaxElapsedTime: r.MaxElapsedTime},
	}
	var err error
	if s.http {
		s.client, err = httpClient(o, w)
	} else {
		var creds credentials.TransportCredentials
		if creds, err = grpcCreds(o); err == nil {
			s.creds = watchedCreds{TransportCredentials: creds, w: w}
		}
		s.dial = []grpc.DialOption{grpc.WithChainUnaryInterceptor(w.interceptor), grpc.WithConnectParams(reconnect),
			grpc.WithDefaultServiceConfig(watchServiceConfig)}
	}
	return s, err
}

// sdkRetry is the struct under every OTLP exporter package's RetryConfig:
// each package declares its own type, all convertible from this one. If
// the SDK ever changes that struct, the conversion stops compiling.
type sdkRetry = struct {
	Enabled                                      bool
	InitialInterval, MaxInterval, MaxElapsedTime time.Duration
}

type retryConfig interface{ ~sdkRetry }

// httpOptions are one http/protobuf exporter package's option constructors
// and compression values: O is its Option, C its Compression, R its
// RetryConfig.
type httpOptions[O, C any, R retryConfig] struct {
	endpointURL func(string) O
	client      func(*http.Client) O
	tls         func(*tls.Config) O
	headers     func(map[string]string) O
	timeout     func(time.Duration) O
	compression func(C) O
	none, gzip  C
	retry       func(R) O
}

func (h httpOptions[O, C, R]) options(s exportSettings) []O {
	comp := h.none
	if s.gzip {
		comp = h.gzip
	}
	return []O{
		h.endpointURL(s.endpoint),
		h.client(s.client),
		h.tls(nil), // the client has the TLS settings
		h.headers(s.headers),
		h.timeout(s.timeout),
		h.compression(comp),
		h.retry(R(s.retry)),
	}
}

// grpcOptions are one grpc exporter package's option constructors: O is
// its Option, R its RetryConfig.
type grpcOptions[O any, R retryConfig] struct {
	endpoint   func(string) O
	creds      func(credentials.TransportCredentials) O
	headers    func(map[string]string) O
	timeout    func(time.Duration) O
	retry      func(R) O
	dial       func(...grpc.DialOption) O
	compressor func(string) O
}

func (g grpcOptions[O, R]) options(s exportSettings) []O {
	opts := []O{
		g.endpoint(s.host),
		g.creds(s.creds),
		g.headers(s.headers),
		g.timeout(s.timeout),
		g.retry(R(s.retry)),
		g.dial(s.dial...),
	}
	// Only "gzip" is a compressor name; anything else logs a complaint.
	if s.gzip {
		opts = append(opts, g.compressor("gzip"))
	}
	return opts
}

// The six exporter packages' option constructors, a signal's two to a row.
// Fields are keyed: several share a type, so a positional row could swap
// two and still compile.
var (
	traceHTTP = httpOptions[otlptracehttp.Option, otlptracehttp.Compression, otlptracehttp.RetryConfig]{
		endpointURL: otlptracehttp.WithEndpointURL, client: otlptracehttp.WithHTTPClient, tls: otlptracehttp.WithTLSClientConfig,
		headers: otlptracehttp.WithHeaders, timeout: otlptracehttp.WithTimeout, retry: otlptracehttp.WithRetry,
		compression: otlptracehttp.WithCompression, none: otlptracehttp.NoCompression, gzip: otlptracehttp.GzipCompression,
	}
	traceGRPC = grpcOptions[otlptracegrpc.Option, otlptracegrpc.RetryConfig]{
		endpoint: otlptracegrpc.WithEndpoint, creds: otlptracegrpc.WithTLSCredentials, headers: otlptracegrpc.WithHeaders,
		timeout: otlptracegrpc.WithTimeout, retry: otlptracegrpc.WithRetry, dial: otlptracegrpc.WithDialOption,
		compressor: otlptracegrpc.WithCompressor,
	}
	metricHTTP = httpOptions[otlpmetrichttp.Option, otlpmetrichttp.Compression, otlpmetrichttp.RetryConfig]{
		endpointURL: otlpmetrichttp.WithEndpointURL, client: otlpmetrichttp.WithHTTPClient, tls: otlpmetrichttp.WithTLSClientConfig,
		headers: otlpmetrichttp.WithHeaders, timeout: otlpmetrichttp.WithTimeout, retry: otlpmetrichttp.WithRetry,
		compression: otlpmetrichttp.WithCompression, none: otlpmetrichttp.NoCompression, gzip: otlpmetrichttp.GzipCompression,
	}
	metricGRPC = grpcOptions[otlpmetricgrpc.Option, otlpmetricgrpc.RetryConfig]{
		endpoint: otlpmetricgrpc.WithEndpoint, creds: otlpmetricgrpc.WithTLSCredentials, headers: otlpmetricgrpc.WithHeaders,
		timeout: otlpmetricgrpc.WithTimeout, retry: otlpmetricgrpc.WithRetry, dial: otlpmetricgrpc.WithDialOption,
		compressor: otlpmetricgrpc.WithCompressor,
	}
	logHTTP = httpOptions[otlploghttp.Option, otlploghttp.Compression, otlploghttp.RetryConfig]{
		endpointURL: otlploghttp.WithEndpointURL, client: otlploghttp.WithHTTPClient, tls: otlploghttp.WithTLSClientConfig,
		headers: otlploghttp.WithHeaders, timeout: otlploghttp.WithTimeout, retry: otlploghttp.WithRetry,
		compression: otlploghttp.WithCompression, none: otlploghttp.NoCompression, gzip: otlploghttp.GzipCompression,
	}
	logGRPC = grpcOptions[otlploggrpc.Option, otlploggrpc.RetryConfig]{
		endpoint: otlploggrpc.WithEndpoint, creds: otlploggrpc.WithTLSCredentials, headers: otlploggrpc.WithHeaders,
		timeout: otlploggrpc.WithTimeout, retry: otlploggrpc.WithRetry, dial: otlploggrpc.WithDialOption,
		compressor: otlploggrpc.WithCompressor,
	}
)

// newOTLPTraceExporter returns the exporter and the client under it, which
// also sends the spool (see package spool).
func newOTLPTraceExporter(ctx context.Context, o OTLP, r Retry, w *watch) (sdktrace.SpanExporter, otlptrace.Client, error) {
	s, err := newExportSettings(o, r, w)
	if err != nil {
		return nil, nil, err
	}
	var client otlptrace.Client
	if s.http {
		client = otlptracehttp.NewClient(traceHTTP.options(s)...)
	} else {
		client = otlptracegrpc.NewClient(traceGRPC.options(s)...)
	}
	exp, err := otlptrace.New(ctx, client)
	return exp, client, err
}

func newOTLPMetricExporter(ctx context.Context, o OTLP, r Retry, w *watch, temporality sdkmetric.TemporalitySelector) (sdkmetric.Exporter, error) {
	s, err := newExportSettings(o, r, w)
	if err != nil {
		return nil, err
	}
	if s.http {
		return otlpmetrichttp.New(ctx, append(metricHTTP.options(s), otlpmetrichttp.WithTemporalitySelector(temporality))...)
	}
	return otlpmetricgrpc.New(ctx, append(metricGRPC.options(s), otlpmetricgrpc.WithTemporalitySelector(temporality))...)
}
