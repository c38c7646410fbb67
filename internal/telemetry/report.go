package telemetry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// reporter writes pi-otel's own warnings to stderr, each destination at
// most once: a collector that is down fails every export, and one line that
// says so and how to fix it is worth more than a line per attempt.
type reporter struct {
	mu    sync.Mutex
	w     io.Writer
	quiet bool
	said  map[string]bool
}

func newReporter(w io.Writer, quiet bool) *reporter {
	return &reporter{w: w, quiet: quiet, said: map[string]bool{}}
}

// once writes msg unless something was already said under key.
func (r *reporter) once(key, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.said[key] {
		return
	}
	r.said[key] = true
	if !r.quiet {
		fmt.Fprintf(r.w, "pi-otel: %s\n", msg)
	}
}

// destination is where one signal goes, for messages.
type destination struct {
	signal string // "traces" or "metrics"
	host   string // host:port, for connection problems
	target string // what the user configured: host:port or URL or file
	hint   string // the way out when there is no collector
}

// failure is a class of export failure: what the line on stderr says,
// whether the collector counts as unreachable, whether a retry can help.
// Each is told by types, status codes and sentinel errors, never by an
// error's text, which a gRPC, SDK or Go upgrade may reword.
type failure int

const (
	otherFailure  failure = iota
	connRefused           // nothing listens there: ECONNREFUSED
	unresolved            // the host name does not resolve
	noRoute               // EHOSTUNREACH, ENETUNREACH
	tlsFailed             // the TLS handshake failed, or the collector sent a TLS alert
	silent                // gRPC: accepted, and no answer to the handshake (see silentConn)
	wantsTLS              // plaintext HTTP to an HTTPS server
	wrongProtocol         // the collector speaks another protocol at that port
	badHeader             // a header the transport will not send
	clientRefused         // Unauthenticated, PermissionDenied; HTTP 401, 403
	noReceiver            // Unimplemented; HTTP 404
	timedOut              // no answer within --timeout
)

// classify tells what kind of failure err is. The order matters where
// several signals meet: a refused connection under a gRPC DeadlineExceeded
// is a refused connection.
func classify(err error) failure {
	code := grpcCode(err)
	httpCode := 0
	if hs, ok := errors.AsType[*httpStatusError](err); ok {
		httpCode = hs.code
	}
	var cause error // gRPC: why the connection under the RPC failed
	if ce, ok := errors.AsType[*connError](err); ok {
		cause = ce.cause
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return connRefused
	case isUnresolved(err):
		return unresolved
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return noRoute
	case tlsDetail(err) != "":
		return tlsFailed
	case cause != nil && silentConn(cause):
		return silent
	case inHandshake(err) && !gaveUp(err):
		// Whatever ended the handshake early (the server hung up on
		// the ClientHello, a missing ALPN protocol), it is TLS's.
		return tlsFailed
	case errors.As(err, new(*plainToTLSError)):
		return wantsTLS
	case cause != nil && hungUp(cause), errors.As(err, new(*notHTTP1Error)), httpCode == http.StatusUnsupportedMediaType:
		return wrongProtocol
	case errors.As(err, new(*badHeaderError)):
		return badHeader
	case code == codes.Unauthenticated || code == codes.PermissionDenied ||
		httpCode == http.StatusUnauthorized || httpCode == http.StatusForbidden:
		return clientRefused
	case httpCode == http.StatusNotFound || code == codes.Unimplemented:
		return noReceiver
	case code == codes.DeadlineExceeded || gaveUp(err):
		return timedOut
	}
	return otherFailure
}

func isUnresolved(err error) bool {
	return errors.As(err, new(*net.DNSError)) || errors.Is(err, errNoAddresses) || errors.As(err, new(*resolveError))
}

// gaveUp reports a wait that ran out: a deadline, or a connection that
// gRPC closed itself when its connect deadline passed.
func gaveUp(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed)
}

// silentConn reports a gRPC connection that the collector accepted and
// then never answered, neither the TLS handshake nor the HTTP/2 preface,
// until gRPC closed it at its connect deadline (MinConnectTimeout): a
// collector frozen, or behind a black-holing proxy, which may answer on
// the next connection. A dial that timed out never got that far.
func silentConn(cause error) bool {
	return gaveUp(cause) && !dialFailed(cause)
}

// hungUp reports a gRPC connection the server closed, or answered with
// something other than HTTP/2 (an HTTP/1 server's "HTTP/1.1 400" read as
// a frame header is too large a frame), instead of its HTTP/2 preface. A
// TLS server that is sent plaintext hangs up so too.
func hungUp(cause error) bool {
	if dialFailed(cause) || inHandshake(cause) {
		return false
	}
	return errors.Is(cause, http2.ErrFrameTooLarge) || errors.Is(cause, io.EOF) ||
		errors.Is(cause, io.ErrUnexpectedEOF) || errors.Is(cause, syscall.ECONNRESET)
}

func inHandshake(err error) bool { return errors.As(err, new(*handshakeError)) }

// dialFailed reports an error of dialing. net marks it only by Op, the
// name of the operation.
func dialFailed(err error) bool {
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "dial"
}

// tlsDetail is what a TLS error says is wrong, or "" if err is none. The
// certificate's own error comes first: the TLS error around it only adds
// "failed to verify certificate".
func tlsDetail(err error) string {
	for _, find := range []func(error) (error, bool){
		find[x509.UnknownAuthorityError], find[x509.CertificateInvalidError], find[x509.HostnameError],
		find[x509.SystemRootsError], find[x509.InsecureAlgorithmError], find[x509.UnhandledCriticalExtension],
		find[*tls.CertificateVerificationError], find[tls.RecordHeaderError], find[tls.AlertError], find[*tls.ECHRejectionError],
	} {
		if e, ok := find(err); ok {
			return e.Error()
		}
	}
	// net/http's own word for TLS sent to a plaintext HTTP server,
	// replacing the tls.RecordHeaderError.
	if errors.Is(err, http.ErrSchemeMismatch) {
		return http.ErrSchemeMismatch.Error()
	}
	// A TLS alert the collector sent (it wants a client certificate, say)
	// is of an unexported type, inside a *net.OpError whose Op crypto/tls
	// sets to "remote error": the narrowest signal there is.
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "remote error" {
		return op.Err.Error()
	}
	return ""
}

// find is errors.AsType for a list.
func find[T error](err error) (error, bool) {
	e, ok := errors.AsType[T](err)
	return e, ok
}

// explain turns an export error into one line for a person. The second
// result tells whether the collector could not be reached at all.
func explain(d destination, err error) (msg string, unreachable bool) {
	text := err.Error()
	switch classify(err) {
	case connRefused:
		return fmt.Sprintf("no collector at %s (connection refused); %s", d.host, d.hint), true
	case unresolved:
		why := "no such host"
		if dns, ok := errors.AsType[*net.DNSError](err); ok && !dns.IsNotFound {
			why = dns.Error()
		} else if re, ok := errors.AsType[*resolveError](err); ok {
			why = re.Error()
		}
		return fmt.Sprintf("cannot resolve the collector host %s (%s); %s", d.host, why, d.hint), true
	case noRoute:
		return fmt.Sprintf("cannot reach the collector at %s (%s); %s", d.host, lastPart(text), d.hint), true
	case tlsFailed:
		return fmt.Sprintf("TLS with the collector at %s failed (%s); for a plaintext collector use an http:// endpoint or --insecure, for a private CA --certificate",
			d.host, tlsReason(err)), false
	case silent:
		return fmt.Sprintf("the collector at %s accepts connections but does not answer; check it, or raise --timeout", d.host), false
	case wantsTLS:
		pe, _ := errors.AsType[*plainToTLSError](err)
		return fmt.Sprintf("the collector at %s wants TLS (it answered plaintext HTTP with %s); use an https:// endpoint", d.host, pe.status), false
	case wrongProtocol:
		return fmt.Sprintf("the collector at %s does not speak this protocol (%s); use --protocol grpc for port 4317 or --protocol http/protobuf for port 4318",
			d.host, lastPart(text)), false
	case clientRefused:
		return fmt.Sprintf("the collector at %s refused the %s (%s); check --headers or OTEL_EXPORTER_OTLP_HEADERS",
			d.host, d.signal, lastPart(text)), false
	case noReceiver:
		return fmt.Sprintf("the collector at %s has no %s receiver there (%s); check the endpoint path or protocol",
			d.target, d.signal, lastPart(text)), false
	case timedOut:
		return fmt.Sprintf("the collector at %s did not answer in time; check the endpoint, or raise --timeout", d.host), false
	}
	return fmt.Sprintf("exporting %s to %s failed: %s", d.signal, d.target, lastPart(text)), false
}

// tlsReason is a TLS failure's own words: those of the typed TLS error,
// else those of whatever ended the handshake.
func tlsReason(err error) string {
	if s := tlsDetail(err); s != "" {
		return s
	}
	if hs, ok := errors.AsType[*handshakeError](err); ok {
		return hs.Error()
	}
	return lastPart(err.Error())
}

// futile reports an export failure no retry can mend: TLS against a
// plaintext collector (or the reverse), the wrong protocol for the port, a
// header the transport refuses to send.
func futile(err error) bool {
	switch classify(err) {
	case tlsFailed, wantsTLS, wrongProtocol, badHeader:
		return true
	}
	return false
}

// cancelled reports an export we called off ourselves; it needs no word.
func cancelled(err error) bool {
	return errors.Is(err, context.Canceled) || grpcCode(err) == codes.Canceled
}

func grpcCode(err error) codes.Code {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code()
	}
	return codes.OK
}

// lastPart keeps the informative tail of a long gRPC error, so the line
// stays short: "rpc error: code = Unauthenticated desc = bad token" becomes
// "bad token". It only shortens what is shown; nothing is decided by it.
func lastPart(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.LastIndex(text, "desc = "); i >= 0 {
		// gRPC quotes a nested description: desc = "...".
		return strings.Trim(text[i+len("desc = "):], "\" ")
	}
	return text
}

// httpStatusError is an HTTP answer other than 2xx, as seen by our
// transport. The exporter reports its own error too; this one keeps the code.
type httpStatusError struct {
	code   int
	status string
}

func (e *httpStatusError) Error() string { return "HTTP " + e.status }
