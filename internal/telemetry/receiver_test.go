package telemetry_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/pi-otel/pi-otel/internal/testutil/otlptest"
)

// newReceiver is the tests' collector: otlptest's, which takes every
// export unless told otherwise.
func newReceiver() *otlptest.Receiver { return &otlptest.Receiver{} }

// failingWhile answers every export as a collector in trouble does (gRPC
// Internal, HTTP 500) while failing is set: not retried by the exporter,
// not a refusal of the data, so the batch goes to the spool.
func failingWhile(failing *atomic.Bool) func(context.Context, otlptest.Export) error {
	return func(context.Context, otlptest.Export) error {
		if failing.Load() {
			return status.Error(codes.Internal, "collector failing")
		}
		return nil
	}
}

// waitFor blocks until cond holds for what the receiver took, or the
// test's context ends.
func waitFor(t *testing.T, ctx context.Context, r *otlptest.Receiver, what string, cond func(r *otlptest.Receiver) bool) {
	t.Helper()
	if !r.Wait(ctx, func() bool { return cond(r) }) {
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

func spanCount(n int) func(r *otlptest.Receiver) bool {
	return func(r *otlptest.Receiver) bool { return len(r.Spans()) >= n }
}

func hasMetrics(r *otlptest.Receiver) bool { return len(r.Metrics()) > 0 }

func hasLogs(r *otlptest.Receiver) bool { return len(r.Logs()) > 0 }

// serveGRPC serves r over gRPC on lis.
func serveGRPC(t *testing.T, r *otlptest.Receiver, lis net.Listener, creds credentials.TransportCredentials) {
	t.Helper()
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	r.ServeGRPC(t, lis, opts...)
}

// serveHTTP serves r over OTLP/HTTP on lis.
func serveHTTP(t *testing.T, r *otlptest.Receiver, lis net.Listener, tlsCfg *tls.Config) {
	t.Helper()
	r.ServeHTTPOn(t, lis, tlsCfg)
}

func listen(t *testing.T) net.Listener { return otlptest.Listen(t) }

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
