package telemetry

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/otlptest"
)

// failure class tests: each class from a real failing server in this
// process, through the real exporters, so that the typed signals the
// classes rely on are the ones gRPC, net/http and the SDK really give.

// fault is one failing collector and what pi-otel must make of it.
type fault struct {
	name     string
	protocol Protocol
	// serve starts the collector and returns the endpoint; it counts the
	// exports that reach it in tries.
	serve       func(t *testing.T, tries *atomic.Int64) string
	timeout     time.Duration // the export timeout, 2s unless set
	certificate string        // the CA file pi-otel is given

	says    string // what the one line on stderr contains
	down    bool   // the collector counts as unreachable
	futile  bool   // the export fails at once, no retry
	refused bool   // the spans count as refused, not sent again
	// tries is how often the export reached the collector: "once",
	// "again" (retried), or "" where it cannot reach it.
	tries string
}

func TestFailureClasses(t *testing.T) {
	// gRPC gives up on a connection that is never answered at its connect
	// deadline, 20s; a shorter one makes the silent class quick to see.
	saved := reconnect.MinConnectTimeout
	reconnect.MinConnectTimeout = 300 * time.Millisecond
	t.Cleanup(func() { reconnect.MinConnectTimeout = saved })
	// The first handshake in a process that checks a certificate against
	// the system's CAs reads them all: a quarter of a second with the race
	// detector, over a second on a loaded machine. A futile export must
	// fail within a second, and past the first connect deadline, also a
	// second (gRPC gives a connection at least its first backoff), the
	// collector looks silent: read them before the clocks run.
	_, _ = x509.SystemCertPool()
	cert, caFile := selfSigned(t)

	answerGRPC := func(c codes.Code, msg string) func(*testing.T, *atomic.Int64) string {
		return func(t *testing.T, tries *atomic.Int64) string {
			return "http://" + serveTraces(t, nil, tries, status.Error(c, msg))
		}
	}
	answerHTTP := func(code int) func(*testing.T, *atomic.Int64) string {
		return func(t *testing.T, tries *atomic.Int64) string {
			return "http://" + serveHTTPStatus(t, nil, tries, code) + "/v1/traces"
		}
	}
	refusedPort := func(scheme, path string) func(*testing.T, *atomic.Int64) string {
		return func(t *testing.T, _ *atomic.Int64) string { return scheme + freeport.Addr(t) + path }
	}
	hole := func(scheme, path string) func(*testing.T, *atomic.Int64) string {
		return func(t *testing.T, _ *atomic.Int64) string { return scheme + collectortest.BlackHole(t) + path }
	}
	const grpcProto, httpProto = ProtocolGRPC, ProtocolHTTPProtobuf
	for _, f := range []fault{
		// The collector cannot be reached.
		{name: "grpc refused port", protocol: grpcProto, serve: refusedPort("http://", ""),
			says: "no collector at HOST (connection refused)", down: true},
		{name: "http refused port", protocol: httpProto, serve: refusedPort("http://", "/v1/traces"),
			says: "no collector at HOST (connection refused)", down: true},
		{name: "grpc host that does not resolve", protocol: grpcProto,
			// Go's resolver never looks up .onion names (RFC 7686): no DNS
			// server needed for "no such host".
			serve: func(*testing.T, *atomic.Int64) string { return "http://collector.pi-otel-test.onion:4317" },
			says:  "cannot resolve the collector host HOST (no such host)", down: true},

		// TLS.
		{name: "grpc TLS with a CA not given", protocol: grpcProto,
			serve: func(t *testing.T, tries *atomic.Int64) string { return "https://" + serveTraces(t, cert, tries, nil) },
			says:  "TLS with the collector at HOST failed (x509: certificate signed by unknown authority)", futile: true},
		{name: "http TLS with a CA not given", protocol: httpProto,
			serve: func(t *testing.T, tries *atomic.Int64) string {
				return "https://" + serveHTTPStatus(t, cert, tries, http.StatusOK) + "/v1/traces"
			},
			says: "TLS with the collector at HOST failed (x509: certificate signed by unknown authority)", futile: true},
		{name: "grpc TLS to a plaintext gRPC server", protocol: grpcProto,
			serve: func(t *testing.T, tries *atomic.Int64) string { return "https://" + serveTraces(t, nil, tries, nil) },
			says:  "TLS with the collector at HOST failed (tls: first record does not look like a TLS handshake)", futile: true},
		{name: "http TLS to a plaintext HTTP server", protocol: httpProto,
			serve: func(t *testing.T, tries *atomic.Int64) string {
				return "https://" + serveHTTPStatus(t, nil, tries, http.StatusOK) + "/v1/traces"
			},
			says: "TLS with the collector at HOST failed (tls: first record does not look like a TLS handshake)", futile: true},

		// Plaintext to TLS, and the wrong protocol for the port.
		{name: "grpc plaintext to a TLS gRPC server", protocol: grpcProto,
			serve: func(t *testing.T, tries *atomic.Int64) string { return "http://" + serveTraces(t, cert, tries, nil) },
			// The TLS server hangs up on the preface: EOF, or a reset when
			// it closes with the preface unread, as the kernel decides.
			says: "the collector at HOST does not speak this protocol (error reading server preface: ", futile: true},
		{name: "http plaintext to a TLS HTTP server", protocol: httpProto,
			serve: func(t *testing.T, tries *atomic.Int64) string {
				return "http://" + serveHTTPStatus(t, cert, tries, http.StatusOK) + "/v1/traces"
			},
			says: "the collector at HOST wants TLS (it answered plaintext HTTP with 400 Bad Request); use an https:// endpoint", futile: true},
		{name: "grpc to an HTTP/1 server", protocol: grpcProto,
			serve: func(t *testing.T, tries *atomic.Int64) string {
				return "http://" + serveHTTPStatus(t, nil, tries, http.StatusOK)
			},
			says: "the collector at HOST does not speak this protocol (error reading server preface: http2: ", futile: true},
		{name: "http to a gRPC server", protocol: httpProto,
			serve: func(t *testing.T, tries *atomic.Int64) string {
				return "http://" + serveTraces(t, nil, tries, nil) + "/v1/traces"
			},
			// net/http's words depend on whether the server's HTTP/2
			// SETTINGS came before the request was written; the class
			// does not.
			says: "the collector at HOST does not speak this protocol (", futile: true},
		{name: "http to a gRPC TLS server", protocol: httpProto,
			serve: func(t *testing.T, tries *atomic.Int64) string {
				return "https://" + serveTraces(t, cert, tries, nil) + "/v1/traces"
			},
			certificate: caFile, says: "the collector at HOST does not speak this protocol (HTTP 415 Unsupported Media Type)"},

		// The collector accepts and never answers.
		{name: "grpc black hole", protocol: grpcProto, serve: hole("http://", ""),
			says: "the collector at HOST accepts connections but does not answer"},
		{name: "grpc TLS black hole", protocol: grpcProto, serve: hole("https://", ""),
			says: "the collector at HOST accepts connections but does not answer"},
		{name: "http black hole", protocol: httpProto, serve: hole("http://", "/v1/traces"), timeout: 300 * time.Millisecond,
			says: "the collector at HOST did not answer in time"},

		// The collector answers, and refuses.
		{name: "grpc InvalidArgument", protocol: grpcProto, serve: answerGRPC(codes.InvalidArgument, "bad span"),
			says: "exporting traces to HOST failed: bad span", refused: true, tries: "once"},
		{name: "http 400", protocol: httpProto, serve: answerHTTP(http.StatusBadRequest),
			says: "exporting traces to TARGET failed: HTTP 400 Bad Request", refused: true, tries: "once"},
		{name: "grpc Unavailable from the collector", protocol: grpcProto, serve: answerGRPC(codes.Unavailable, "memory limit"),
			says: "exporting traces to HOST failed: memory limit", tries: "again"},
		{name: "http 503", protocol: httpProto, serve: answerHTTP(http.StatusServiceUnavailable),
			says: "exporting traces to TARGET failed: HTTP 503 Service Unavailable", tries: "again"},
		{name: "http 429", protocol: httpProto, serve: answerHTTP(http.StatusTooManyRequests),
			says: "exporting traces to TARGET failed: HTTP 429 Too Many Requests", tries: "again"},
		{name: "grpc Unauthenticated", protocol: grpcProto, serve: answerGRPC(codes.Unauthenticated, "missing credentials"),
			says: "the collector at HOST refused the traces (missing credentials); check --headers", tries: "once"},
		{name: "http 401", protocol: httpProto, serve: answerHTTP(http.StatusUnauthorized),
			says: "the collector at HOST refused the traces (HTTP 401 Unauthorized); check --headers", tries: "once"},
		{name: "http 404", protocol: httpProto, serve: answerHTTP(http.StatusNotFound),
			says: "the collector at TARGET has no traces receiver there (HTTP 404 Not Found)", tries: "once"},
		{name: "grpc Unimplemented", protocol: grpcProto,
			serve: func(t *testing.T, tries *atomic.Int64) string { return "http://" + serveNothing(t) },
			says:  "the collector at HOST has no traces receiver there"},
		{name: "grpc DeadlineExceeded", protocol: grpcProto, serve: answerGRPC(codes.DeadlineExceeded, "too slow"),
			says: "the collector at HOST did not answer in time", tries: "again"},
	} {
		t.Run(f.name, func(t *testing.T) { f.check(t) })
	}
}

func (f fault) check(t *testing.T) {
	var tries atomic.Int64
	endpoint := f.serve(t, &tries)
	timeout := f.timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	o := OTLP{Protocol: f.protocol, Endpoint: endpoint, Timeout: timeout, Certificate: f.certificate}
	out := &lockedBuffer{}
	w := &watch{rep: newReporter(out, false), dest: destination{signal: "traces", host: hostOf(endpoint), target: o.Target()}}
	// Quick retries within a bound that a futile or refused export does
	// not wait for; a hang fails the test.
	exp, client, err := newOTLPTraceExporter(context.Background(), o,
		Retry{InitialInterval: 10 * time.Millisecond, MaxInterval: 10 * time.Millisecond, MaxElapsedTime: time.Second}, w)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = client.UploadTraces(ctx, []*tracepb.ResourceSpans{{}})
	took := time.Since(start)
	if err == nil {
		t.Fatal("the export went through")
	}
	says := strings.NewReplacer("HOST", w.dest.host, "TARGET", w.dest.target).Replace(f.says)
	line := out.String()
	t.Logf("%s(%v after %s, %d tries)", line, err, took, tries.Load())
	if !strings.Contains(line, says) || strings.Count(line, "\n") != 1 {
		t.Errorf("stderr = %q, want one line with %q", line, says)
	}
	// What the exporter finally returns is what the span queue and the spool
	// judge, so it must keep what matters to them, not only the attempt
	// watched.
	if w.isDown() != f.down || futile(err) != f.futile || refused(err) != f.refused {
		t.Errorf("down %v, futile %v, refused %v; want %v, %v, %v", w.isDown(), futile(err), refused(err), f.down, f.futile, f.refused)
	}
	if n := tries.Load(); f.tries == "once" && n != 1 || f.tries == "again" && n < 2 {
		t.Errorf("the export reached the collector %d times; want %s", n, f.tries)
	}
	if f.futile && took > time.Second {
		t.Errorf("a futile export took %s", took)
	}
}

// lockedBuffer is a stderr the exporter's goroutines may write to while
// the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveTraces is a gRPC OTLP receiver that answers every export with
// answer (nil: success), and counts the exports. With cert it speaks TLS.
func serveTraces(t *testing.T, cert *tls.Certificate, tries *atomic.Int64, answer error) string {
	t.Helper()
	var opts []grpc.ServerOption
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{*cert}})))
	}
	r := &otlptest.Receiver{Answer: func(context.Context, otlptest.Export) error {
		tries.Add(1)
		return answer
	}}
	return r.StartGRPC(t, opts...)
}

// serveNothing is a gRPC server without a trace service.
func serveNothing(t *testing.T) string {
	t.Helper()
	srv := grpc.NewServer()
	lis := listenLocal(t)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// serveHTTPStatus answers every request with code, and counts them. With
// cert it speaks TLS.
func serveHTTPStatus(t *testing.T, cert *tls.Certificate, tries *atomic.Int64, code int) string {
	t.Helper()
	lis := listenLocal(t)
	srv := &http.Server{ReadHeaderTimeout: time.Minute, ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tries.Add(1)
		w.WriteHeader(code)
	})}
	if cert != nil {
		lis = tls.NewListener(lis, &tls.Config{Certificates: []tls.Certificate{*cert}})
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return lis.Addr().String()
}

func listenLocal(t *testing.T) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	return lis
}

// selfSigned is a certificate for 127.0.0.1 that no CA pi-otel knows
// signed, and a PEM file of it, to trust it as its own CA.
func selfSigned(t *testing.T) (*tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, file
}
