package telemetry_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
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

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// receiver is an in-process OTLP collector: it keeps what it is sent and the
// headers it came with, and can demand a header.
type receiver struct {
	coltracepb.UnimplementedTraceServiceServer

	requireKey, requireValue string // when set, requests without this header are refused
	// failing makes every export fail as a collector in trouble does
	// (gRPC Internal, HTTP 500): not retried by the exporter, not a
	// refusal of the data, so the batch goes to the spool.
	failing atomic.Bool
	invalid bool // refuse every export as invalid: InvalidArgument, HTTP 400
	// answer, when set, sees each gRPC export first; an error it returns
	// is the answer.
	answer func(proto.Message) error

	mu      sync.Mutex
	traces  []*coltracepb.ExportTraceServiceRequest
	metrics []*colmetricpb.ExportMetricsServiceRequest
	logs    []*collogpb.ExportLogsServiceRequest
	headers []http.Header
	paths   []string
	changed chan struct{} // closed and replaced on every request
}

func newReceiver() *receiver { return &receiver{changed: make(chan struct{})} }

func (r *receiver) allowed(h http.Header) bool {
	return r.requireKey == "" || h.Get(r.requireKey) == r.requireValue
}

// record keeps one request, a trace, metrics or logs export, and what it
// came with.
func (r *receiver) record(h http.Header, path string, req proto.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch m := req.(type) {
	case *coltracepb.ExportTraceServiceRequest:
		r.traces = append(r.traces, m)
	case *colmetricpb.ExportMetricsServiceRequest:
		r.metrics = append(r.metrics, m)
	case *collogpb.ExportLogsServiceRequest:
		r.logs = append(r.logs, m)
	}
	r.headers = append(r.headers, h)
	r.paths = append(r.paths, path)
	close(r.changed)
	r.changed = make(chan struct{})
}

func mdHeader(ctx context.Context) http.Header {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}

// acceptGRPC is every service's Export: it refuses a request without the
// required header, and records the others.
func (r *receiver) acceptGRPC(ctx context.Context, path string, req proto.Message) error {
	h := mdHeader(ctx)
	if !r.allowed(h) {
		return status.Error(codes.Unauthenticated, "missing credentials")
	}
	if r.answer != nil {
		if err := r.answer(req); err != nil {
			return err
		}
	}
	if r.failing.Load() {
		return status.Error(codes.Internal, "collector failing")
	}
	if r.invalid {
		return status.Error(codes.InvalidArgument, "invalid spans")
	}
	r.record(h, path, req)
	return nil
}

// Export is the trace service's; the services answer an empty response even
// with an error, which gRPC then ignores.
func (r *receiver) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	return &coltracepb.ExportTraceServiceResponse{}, r.acceptGRPC(ctx, "grpc traces", req)
}

// metricsService adapts the receiver to the metrics service, whose method
// has the same name as the trace service's.
type metricsService struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *receiver
}

func (m metricsService) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	return &colmetricpb.ExportMetricsServiceResponse{}, m.r.acceptGRPC(ctx, "grpc metrics", req)
}

// logsService adapts the receiver to the logs service.
type logsService struct {
	collogpb.UnimplementedLogsServiceServer
	r *receiver
}

func (l logsService) Export(ctx context.Context, req *collogpb.ExportLogsServiceRequest) (*collogpb.ExportLogsServiceResponse, error) {
	return &collogpb.ExportLogsServiceResponse{}, l.r.acceptGRPC(ctx, "grpc logs", req)
}

func hasLogs(r *receiver) bool { return len(r.logs) > 0 }

// ServeHTTP is the OTLP/HTTP protobuf receiver.
func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if !r.allowed(req.Header) {
		http.Error(w, "missing credentials", http.StatusUnauthorized)
		return
	}
	if r.failing.Load() {
		http.Error(w, "collector failing", http.StatusInternalServerError)
		return
	}
	if r.invalid {
		http.Error(w, "invalid spans", http.StatusBadRequest)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var m, resp proto.Message
	switch req.URL.Path {
	case "/v1/traces", "/custom/traces":
		m, resp = &coltracepb.ExportTraceServiceRequest{}, &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		m, resp = &colmetricpb.ExportMetricsServiceRequest{}, &colmetricpb.ExportMetricsServiceResponse{}
	case "/v1/logs":
		m, resp = &collogpb.ExportLogsServiceRequest{}, &collogpb.ExportLogsServiceResponse{}
	default:
		http.NotFound(w, req)
		return
	}
	if err := proto.Unmarshal(raw, m); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.record(req.Header.Clone(), req.URL.Path, m)
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// waitFor blocks until cond holds for the receiver's state, or the test's
// context ends.
func (r *receiver) waitFor(t *testing.T, ctx context.Context, what string, cond func(r *receiver) bool) {
	t.Helper()
	if !await(ctx, &r.mu, &r.changed, func() bool { return cond(r) }) {
		t.Fatalf("receiver never got %s", what)
	}
}

// await calls cond under mu, again each time *changed is closed, until
// cond holds (true) or ctx ends (false). Writers close *changed and replace
// it, under mu, on every change.
func await(ctx context.Context, mu *sync.Mutex, changed *chan struct{}, cond func() bool) bool {
	for {
		mu.Lock()
		ok, ch := cond(), *changed
		mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

func spanCount(n int) func(r *receiver) bool {
	return func(r *receiver) bool {
		c := 0
		for _, req := range r.traces {
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					c += len(ss.Spans)
				}
			}
		}
		return c >= n
	}
}

func hasMetrics(r *receiver) bool { return len(r.metrics) > 0 }

// serveGRPC starts the receiver as a gRPC server on lis.
func serveGRPC(t *testing.T, r *receiver, lis net.Listener, creds credentials.TransportCredentials) {
	t.Helper()
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	coltracepb.RegisterTraceServiceServer(srv, r)
	colmetricpb.RegisterMetricsServiceServer(srv, metricsService{r: r})
	collogpb.RegisterLogsServiceServer(srv, logsService{r: r})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
}

// serveHTTP starts the receiver as an OTLP/HTTP server on lis.
func serveHTTP(t *testing.T, r *receiver, lis net.Listener, tlsCfg *tls.Config) {
	t.Helper()
	srv := &http.Server{Handler: r, ReadHeaderTimeout: time.Minute}
	if tlsCfg != nil {
		lis = tls.NewListener(lis, tlsCfg)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return lis
}

// pki is a throwaway CA with a server certificate for 127.0.0.1 and a
// client certificate, all written as PEM files.
type pki struct {
	caFile, clientCert, clientKey string
	pool                          *x509.CertPool
	server                        tls.Certificate
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pi-otel test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := pki{pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.caFile = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)

	leaf := func(serial int64, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	srvDER, srvKey := leaf(2, x509.ExtKeyUsageServerAuth)
	p.server = tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}
	cliDER, cliKey := leaf(3, x509.ExtKeyUsageClientAuth)
	p.clientCert = writePEM(t, dir, "client.pem", "CERTIFICATE", cliDER)
	keyDER, err := x509.MarshalECPrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	p.clientKey = writePEM(t, dir, "client.key", "EC PRIVATE KEY", keyDER)
	return p
}

// serverTLS requires a client certificate from the CA when mutual is set.
func (p pki) serverTLS(mutual bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{p.server}, MinVersion: tls.VersionTLS12}
	if mutual {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = p.pool
	}
	return c
}

func writePEM(t *testing.T, dir, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	var b bytes.Buffer
	if err := pem.Encode(&b, &pem.Block{Type: kind, Bytes: der}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// syncBuffer is a stderr stand-in that tests can wait on.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	close(s.changed)
	s.changed = make(chan struct{})
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor blocks until the output contains sub, or ctx ends.
func (s *syncBuffer) waitFor(t *testing.T, ctx context.Context, sub string) {
	t.Helper()
	if !await(ctx, &s.mu, &s.changed, func() bool { return strings.Contains(s.b.String(), sub) }) {
		t.Fatalf("stderr never said %q; it has:\n%s", sub, s.String())
	}
}
