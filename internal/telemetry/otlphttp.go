package telemetry

// The HTTP exporters' side of the watch: what each attempt learnt, typed.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// watchedTransport reports each HTTP attempt to the watch, with what it
// learnt in types: the SDK's HTTP exporters keep only the text of a status
// code, and net/http has no type for an answer that is not HTTP. It also
// marks transport errors as temporary: the SDK's HTTP exporters retry only
// temporary network errors, and "connection refused" is not one, yet it is
// exactly the error of a collector that has not started yet.
type watchedTransport struct {
	base http.RoundTripper
	w    *watch
	// plain is set for an http:// endpoint, whose connections are
	// replyConns; proxy is the transport's choice of proxy, through which
	// the first bytes on a connection are the proxy's.
	plain bool
	proxy func(*http.Request) (*url.URL, error)
}

func (t watchedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := checkHeaders(req.Header); err != nil {
		t.w.observe(err)
		return nil, err
	}
	direct := t.plain && t.direct(req)
	var conn connSeen
	if direct {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{GotConn: conn.got}))
	}
	resp, err := t.base.RoundTrip(req)
	switch {
	case err != nil:
		seen := err
		if rc, ok := conn.get().(*replyConn); ok && rc.notHTTP1() {
			seen = &notHTTP1Error{err}
		} else if ctxErr := requestDone(req); ctxErr != nil {
			// The transport's own error for it is an untyped "net/http:
			// request canceled".
			seen = fmt.Errorf("%w (%w)", err, ctxErr)
		}
		t.w.observe(seen)
		switch {
		case futile(seen):
			return nil, seen
		case req.Context().Err() == nil:
			return nil, retryableError{err}
		}
		return nil, err
	case resp.StatusCode == http.StatusBadRequest && direct && !resp.ProtoAtLeast(1, 1):
		// Go's HTTPS servers, the Collector's among them, answer a
		// plaintext request with a bare "HTTP/1.0 400 Bad Request": no
		// OTLP refusal of the spans, which an HTTP/1.1 request gets in
		// HTTP/1.1 (RFC 9110, 6.2).
		perr := &plainToTLSError{status: resp.Status}
		t.w.observe(perr)
		_ = resp.Body.Close()
		return nil, perr
	case resp.StatusCode == http.StatusBadRequest:
		// The SDK's exporters keep only the status text; the error says
		// what it was, so that the batch counts as refused (see refused).
		herr := &httpStatusError{code: resp.StatusCode, status: resp.Status}
		t.w.observe(herr)
		_ = resp.Body.Close()
		return nil, herr
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		t.w.observe(&httpStatusError{code: resp.StatusCode, status: resp.Status})
	default:
		t.w.observe(nil)
	}
	return resp, nil
}

// direct reports a request that goes to the collector without a proxy.
func (t watchedTransport) direct(req *http.Request) bool {
	if t.proxy == nil {
		return true
	}
	u, err := t.proxy(req)
	return err == nil && u == nil
}

// requestDone is why an HTTP request's context ended, or nil. A
// http.Client's Timeout also closes the request's Cancel channel, which
// can end the request an instant before the context's own timer, so a
// deadline passed counts too.
func requestDone(req *http.Request) error {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// connSeen is the connection a request got, as httptrace reports it from
// the transport's goroutines.
type connSeen struct {
	mu sync.Mutex
	c  net.Conn
}

func (s *connSeen) got(info httptrace.GotConnInfo) {
	s.mu.Lock()
	s.c = info.Conn
	s.mu.Unlock()
}

func (s *connSeen) get() net.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c
}

// replyConn remembers how the server's first answer on a plaintext
// connection began. One that does not begin "HTTP/" is no HTTP/1 answer: a
// gRPC port answers with an HTTP/2 SETTINGS frame, which net/http reports
// only as the text "malformed HTTP response".
type replyConn struct {
	net.Conn
	mu   sync.Mutex
	head []byte // the first bytes read, up to len("HTTP/")
}

const http1Prefix = "HTTP/"

func (c *replyConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	if k := min(n, len(http1Prefix)-len(c.head)); k > 0 {
		c.head = append(c.head, p[:k]...)
	}
	c.mu.Unlock()
	return n, err
}

// notHTTP1 reports that the server began its answer with bytes no
// HTTP/1 response begins with.
func (c *replyConn) notHTTP1() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.head) > 0 && !strings.HasPrefix(http1Prefix, string(c.head))
}

// replyConns makes a transport's plaintext connections replyConns.
func replyConns(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &replyConn{Conn: c}, nil
	}
}

// checkHeaders refuses, before sending, a header net/http would refuse
// with an untyped error: the same test, httpguts, that net/http uses.
func checkHeaders(h http.Header) error {
	for k, vs := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return &badHeaderError{key: k}
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return &badHeaderError{key: k, value: true}
			}
		}
	}
	return nil
}

// badHeaderError is a header that cannot be sent. The value is not in
// it: it may be a secret.
type badHeaderError struct {
	key   string
	value bool // the value is at fault, not the name
}

func (e *badHeaderError) Error() string {
	if e.value {
		return fmt.Sprintf("invalid header field value for %q", e.key)
	}
	return fmt.Sprintf("invalid header field name %q", e.key)
}

// notHTTP1Error is a failed HTTP request whose server did not answer in
// HTTP/1.
type notHTTP1Error struct{ err error }

func (e *notHTTP1Error) Error() string { return e.err.Error() }
func (e *notHTTP1Error) Unwrap() error { return e.err }

// plainToTLSError is an HTTPS server's answer to plaintext.
type plainToTLSError struct{ status string }

func (e *plainToTLSError) Error() string {
	return "HTTP " + e.status + " to plaintext, as from an HTTPS server"
}

type retryableError struct{ err error }

func (e retryableError) Error() string   { return e.err.Error() }
func (e retryableError) Unwrap() error   { return e.err }
func (e retryableError) Temporary() bool { return true }
func (e retryableError) Timeout() bool   { return false }
