package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"

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

// explain turns an export error into one line for a person. The second
// result tells whether the collector could not be reached at all.
func explain(d destination, err error) (msg string, unreachable bool) {
	text := err.Error()
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(text, s) {
				return true
			}
		}
		return false
	}
	code := grpcCode(err)
	var hs *httpStatusError
	httpCode := 0
	if errors.As(err, &hs) {
		httpCode = hs.code
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED) || has("connection refused"):
		return fmt.Sprintf("no collector at %s (connection refused); %s", d.host, d.hint), true
	case has("no such host", "produced zero addresses"):
		return fmt.Sprintf("cannot resolve the collector host %s (no such host); %s", d.host, d.hint), true
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		has("no route to host", "network is unreachable"):
		return fmt.Sprintf("cannot reach the collector at %s (%s); %s", d.host, lastPart(text), d.hint), true
	case has("x509:", "tls:", "certificate", "authentication handshake failed"):
		return fmt.Sprintf("TLS with the collector at %s failed (%s); for a plaintext collector use an http:// endpoint or --insecure, for a private CA --certificate",
			d.host, lastPart(text)), false
	case silentHandshake(text):
		return fmt.Sprintf("the collector at %s accepts connections but does not answer; check it, or raise --timeout", d.host), false
	case has("server preface", "frame too large", "malformed HTTP", "HTTP/1.1 header"), httpCode == http.StatusUnsupportedMediaType:
		return fmt.Sprintf("the collector at %s does not speak this protocol (%s); use --protocol grpc for port 4317 or --protocol http/protobuf for port 4318",
			d.host, lastPart(text)), false
	case code == codes.Unauthenticated || code == codes.PermissionDenied ||
		httpCode == http.StatusUnauthorized || httpCode == http.StatusForbidden:
		return fmt.Sprintf("the collector at %s refused the %s (%s); check --headers or OTEL_EXPORTER_OTLP_HEADERS",
			d.host, d.signal, lastPart(text)), false
	case httpCode == http.StatusNotFound || code == codes.Unimplemented:
		return fmt.Sprintf("the collector at %s has no %s receiver there (%s); check the endpoint path or protocol",
			d.target, d.signal, lastPart(text)), false
	case errors.Is(err, context.DeadlineExceeded) || code == codes.DeadlineExceeded || has("i/o timeout"):
		return fmt.Sprintf("the collector at %s did not answer in time; check the endpoint, or raise --timeout", d.host), false
	}
	return fmt.Sprintf("exporting %s to %s failed: %s", d.signal, d.target, lastPart(text)), false
}

// futile reports an export failure no retry can mend: TLS against a
// plaintext collector (or the reverse), the wrong protocol for the port, a
// header the transport refuses to send.
func futile(err error) bool {
	text := err.Error()
	if silentHandshake(text) {
		return false
	}
	for _, s := range []string{"x509:", "tls:", "authentication handshake failed",
		"server preface", "frame too large", "malformed HTTP", "HTTP/1.1 header",
		"invalid header field", "non-printable ASCII"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// silentHandshake reports a gRPC connection that gRPC closed itself
// because the server preface never came (MinConnectTimeout): a collector
// that accepts and does not answer, frozen or behind a black-holing proxy,
// which may answer on the next connection. It is no protocol mismatch.
func silentHandshake(text string) bool {
	return strings.Contains(text, "server preface") &&
		(strings.Contains(text, "use of closed network connection") || strings.Contains(text, "i/o timeout"))
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

// lastPart keeps the informative tail of a long wrapped error, so the line
// stays short: "rpc error: code = Unavailable desc = connection error: desc =
// \"transport: ...: x509: certificate signed by unknown authority\"" becomes
// "x509: certificate signed by unknown authority".
func lastPart(text string) string {
	text = strings.TrimSpace(text)
	for _, m := range []string{"x509: ", "tls: "} {
		if i := strings.LastIndex(text, m); i >= 0 {
			return strings.TrimRight(text[i:], "\" ")
		}
	}
	if i := strings.LastIndex(text, "desc = "); i >= 0 {
		text = text[i+len("desc = "):]
	}
	return strings.Trim(text, "\" ")
}

// httpStatusError is an HTTP answer other than 2xx, as seen by our
// transport. The exporter reports its own error too; this one keeps the code.
type httpStatusError struct {
	code   int
	status string
}

func (e *httpStatusError) Error() string { return "HTTP " + e.status }
