// Package otlptest is the tests' one in-process OTLP collector: a receiver
// of traces, metrics and logs over gRPC and over HTTP/protobuf, which keeps
// what it takes and lets a test decide how each export is answered (taken,
// refused, failed, or never answered, as a wedged collector does).
package otlptest

import (
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/hex"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
)

// Export is one export request as the receiver got it.
type Export struct {
	// Path is "grpc traces", "grpc metrics" or "grpc logs", or the HTTP
	// request's path.
	Path string
	// Header holds the HTTP headers, or the gRPC metadata.
	Header http.Header
	// Request is an *ExportTraceServiceRequest,
	// *ExportMetricsServiceRequest or *ExportLogsServiceRequest.
	Request proto.Message
}

// Receiver is an in-process OTLP collector. Its zero value takes every
// export; set Answer before serving to answer otherwise.
type Receiver struct {
	// Answer, when set, sees every well-formed export first. A non-nil
	// error is the answer, and the export is not kept: a gRPC status
	// (status.Error), sent over HTTP as its HTTP equivalent (HTTPStatus).
	// It may block until ctx ends, as a collector that never answers.
	Answer func(ctx context.Context, e Export) error
	// CountOnly keeps the counts of what was taken (Counts), not the
	// exports themselves: for soaks that send more than memory should
	// hold.
	CountOnly bool

	mu             sync.Mutex
	taken          []Export
	exports, spans int
	changed        chan struct{} // closed and replaced on every export taken
}

// RequireHeader is an Answer that refuses, as Unauthenticated, every
// export without header key set to value.
func RequireHeader(key, value string) func(context.Context, Export) error {
	return func(_ context.Context, e Export) error {
		if e.Header.Get(key) != value {
			return status.Error(codes.Unauthenticated, "missing credentials")
		}
		return nil
	}
}

// HTTPStatus is the HTTP status that OTLP/HTTP answers for a gRPC code.
func HTTPStatus(c codes.Code) int {
	switch c {
	case codes.OK:
		return http.StatusOK
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.Unauthenticated:
		return http.StatusUnauthorized
	case codes.PermissionDenied:
		return http.StatusForbidden
	case codes.NotFound, codes.Unimplemented:
		return http.StatusNotFound
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// receive answers one export, and keeps it when it is taken.
func (r *Receiver) receive(ctx context.Context, e Export) error {
	if r.Answer != nil {
		if err := r.Answer(ctx, e); err != nil {
			return err
		}
	}
	spans := 0
	if req, ok := e.Request.(*coltracepb.ExportTraceServiceRequest); ok {
		for range otlpwalk.Spans(req) {
			spans++
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exports++
	r.spans += spans
	if !r.CountOnly {
		r.taken = append(r.taken, e)
	}
	if r.changed != nil {
		close(r.changed)
	}
	r.changed = make(chan struct{})
	return nil
}

// Counts returns how many exports were taken so far, and how many spans
// they held.
func (r *Receiver) Counts() (exports, spans int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.exports, r.spans
}

// Exports returns the exports taken so far, in order.
func (r *Receiver) Exports() []Export {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Export(nil), r.taken...)
}

// Traces returns the trace exports taken so far.
func (r *Receiver) Traces() []*coltracepb.ExportTraceServiceRequest {
	return requests[*coltracepb.ExportTraceServiceRequest](r)
}

// Metrics returns the metrics exports taken so far.
func (r *Receiver) Metrics() []*colmetricpb.ExportMetricsServiceRequest {
	return requests[*colmetricpb.ExportMetricsServiceRequest](r)
}

// Logs returns the logs exports taken so far.
func (r *Receiver) Logs() []*collogpb.ExportLogsServiceRequest {
	return requests[*collogpb.ExportLogsServiceRequest](r)
}

func requests[T proto.Message](r *Receiver) []T {
	var out []T
	for _, e := range r.Exports() {
		if m, ok := e.Request.(T); ok {
			out = append(out, m)
		}
	}
	return out
}

// Spans returns every span taken so far, in order.
func (r *Receiver) Spans() []*tracepb.Span {
	var out []*tracepb.Span
	for _, req := range r.Traces() {
		for s := range otlpwalk.Spans(req) {
			out = append(out, s)
		}
	}
	return out
}

// SpanIDs counts how often each span id (hex) was taken.
func (r *Receiver) SpanIDs() map[string]int {
	out := map[string]int{}
	for _, s := range r.Spans() {
		out[hex.EncodeToString(s.GetSpanId())]++
	}
	return out
}

// Wait blocks until cond holds, checking it again after every export
// taken, and reports false if ctx ends first.
func (r *Receiver) Wait(ctx context.Context, cond func() bool) bool {
	for {
		r.mu.Lock()
		if r.changed == nil {
			r.changed = make(chan struct{})
		}
		ch := r.changed
		r.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// Listen listens on a free port of 127.0.0.1, closed with the test.
func Listen(tb testing.TB) net.Listener {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = lis.Close() })
	return lis
}

// StartGRPC serves the receiver over gRPC on a free port of 127.0.0.1
// until the test ends, and returns its address.
func (r *Receiver) StartGRPC(tb testing.TB, opts ...grpc.ServerOption) string {
	tb.Helper()
	lis := Listen(tb)
	r.ServeGRPC(tb, lis, opts...)
	return lis.Addr().String()
}

// ServeGRPC serves the receiver over gRPC on lis until the test ends.
func (r *Receiver) ServeGRPC(tb testing.TB, lis net.Listener, opts ...grpc.ServerOption) {
	srv := grpc.NewServer(opts...)
	coltracepb.RegisterTraceServiceServer(srv, traceService{r: r})
	colmetricpb.RegisterMetricsServiceServer(srv, metricsService{r: r})
	collogpb.RegisterLogsServiceServer(srv, logsService{r: r})
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
}

// StartHTTP serves the receiver over OTLP/HTTP on a free port of
// 127.0.0.1 until the test ends, with TLS when cfg is not nil, and returns
// its address.
func (r *Receiver) StartHTTP(tb testing.TB, cfg *tls.Config) string {
	tb.Helper()
	lis := Listen(tb)
	r.ServeHTTPOn(tb, lis, cfg)
	return lis.Addr().String()
}

// ServeHTTPOn serves the receiver over OTLP/HTTP on lis until the test
// ends, with TLS when cfg is not nil.
func (r *Receiver) ServeHTTPOn(tb testing.TB, lis net.Listener, cfg *tls.Config) {
	srv := &http.Server{Handler: r, ReadHeaderTimeout: time.Minute, ErrorLog: log.New(io.Discard, "", 0)}
	if cfg != nil {
		lis = tls.NewListener(lis, cfg)
	}
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(func() { _ = srv.Close() })
}

func incoming(ctx context.Context) http.Header {
	h := http.Header{}
	md, _ := metadata.FromIncomingContext(ctx)
	for k, vs := range md {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	return h
}

// The three gRPC services share one method name, Export, so each has an
// adapter. They answer an empty response even with an error, which gRPC
// then ignores.
type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	r *Receiver
}

func (s traceService) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	return &coltracepb.ExportTraceServiceResponse{}, s.r.receive(ctx, Export{Path: "grpc traces", Header: incoming(ctx), Request: req})
}

type metricsService struct {
	colmetricpb.UnimplementedMetricsServiceServer
	r *Receiver
}

func (s metricsService) Export(ctx context.Context, req *colmetricpb.ExportMetricsServiceRequest) (*colmetricpb.ExportMetricsServiceResponse, error) {
	return &colmetricpb.ExportMetricsServiceResponse{}, s.r.receive(ctx, Export{Path: "grpc metrics", Header: incoming(ctx), Request: req})
}

type logsService struct {
	collogpb.UnimplementedLogsServiceServer
	r *Receiver
}

func (s logsService) Export(ctx context.Context, req *collogpb.ExportLogsServiceRequest) (*collogpb.ExportLogsServiceResponse, error) {
	return &collogpb.ExportLogsServiceResponse{}, s.r.receive(ctx, Export{Path: "grpc logs", Header: incoming(ctx), Request: req})
}

// ServeHTTP is the OTLP/HTTP protobuf receiver: /v1/traces (and
// /custom/traces, for a configured path), /v1/metrics and /v1/logs.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
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
	if err == nil && req.Header.Get("Content-Type") == "application/x-protobuf" {
		err = proto.Unmarshal(raw, m)
	} else if err == nil {
		err = status.Error(codes.InvalidArgument, "not application/x-protobuf")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := r.receive(req.Context(), Export{Path: req.URL.Path, Header: req.Header.Clone(), Request: m}); err != nil {
		st, _ := status.FromError(err)
		http.Error(w, st.Message(), HTTPStatus(st.Code()))
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}
