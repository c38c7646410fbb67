package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"net"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"
)

// gRPC hands an RPC the failure of its connection as text only: the
// picker makes it status.Error(codes.Unavailable, err.Error())
// (picker_wrapper.go), and the DNS resolver formats lookup errors with %v.
// The typed error still exists one level down: a SubConn that fails
// reports TRANSIENT_FAILURE to its load balancer with the transport's
// ConnectionError, which unwraps to the dial, TLS or HTTP/2 framing error.
// So each exporter's connection runs pick_first under watchBalancer, which
// records that error in the watch, and the interceptor attaches it to the
// RPC's error (connError). A custom dialer would see dial errors too, but
// it turns off gRPC's support for HTTPS_PROXY.

// watchBalancer is pick_first, watched.
const watchBalancer = "pi_otel_watch"

// watchServiceConfig selects watchBalancer for a ClientConn.
const watchServiceConfig = `{"loadBalancingConfig":[{"` + watchBalancer + `":{}}]}`

func init() { balancer.Register(watchBuilder{}) }

type watchBuilder struct{}

func (watchBuilder) Name() string { return watchBalancer }

// Build finds the watch through the connection's credentials, the one
// per-connection value a balancer is given that pi-otel sets.
func (watchBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	pf := balancer.Get(pickfirst.Name)
	creds, ok := opts.DialCreds.(watchedCreds)
	if !ok {
		return pf.Build(cc, opts)
	}
	return watchedBalancer{Balancer: pf.Build(watchedClientConn{ClientConn: cc, w: creds.w}, opts), w: creds.w}
}

func (watchBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	return balancer.Get(pickfirst.Name).(balancer.ConfigParser).ParseConfig(js)
}

// watchedBalancer records what name resolution gave.
type watchedBalancer struct {
	balancer.Balancer
	w *watch
}

func (b watchedBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	if len(s.ResolverState.Addresses) == 0 && len(s.ResolverState.Endpoints) == 0 {
		// gRPC's DNS resolver turns "no such host" into an empty list.
		b.w.setConnCause(errNoAddresses)
	} else {
		b.w.resolved()
	}
	return b.Balancer.UpdateClientConnState(s)
}

// ResolverError is a lookup that failed otherwise (a timeout, a DNS
// server failure); its error is text already.
func (b watchedBalancer) ResolverError(err error) {
	b.w.setConnCause(&resolveError{err})
	b.Balancer.ResolverError(err)
}

// watchedClientConn records each SubConn's connection failures.
type watchedClientConn struct {
	balancer.ClientConn
	w *watch
}

func (c watchedClientConn) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	next := opts.StateListener
	opts.StateListener = func(s balancer.SubConnState) {
		switch s.ConnectivityState {
		case connectivity.TransientFailure:
			c.w.setConnCause(s.ConnectionError)
		case connectivity.Ready:
			c.w.setConnCause(nil)
		}
		if next != nil {
			next(s)
		}
	}
	//lint:ignore SA1019 it is how pick_first makes its SubConns, so a wrapper has to pass it on
	return c.ClientConn.NewSubConn(addrs, opts)
}

// watchedCreds marks the errors of the transport security handshake, so
// that a failed handshake tells apart from a failure before it (dialing)
// or after it (the server's HTTP/2 preface). It also carries the watch to
// watchBuilder.
type watchedCreds struct {
	credentials.TransportCredentials
	w *watch
}

func (c watchedCreds) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	tc, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, conn)
	if err != nil {
		return nil, nil, &handshakeError{err}
	}
	return tc, info, nil
}

func (c watchedCreds) Clone() credentials.TransportCredentials {
	return watchedCreds{TransportCredentials: c.TransportCredentials.Clone(), w: c.w}
}

// handshakeError is a failed TLS handshake (gRPC) or a failure during it.
type handshakeError struct{ err error }

func (e *handshakeError) Error() string { return e.err.Error() }
func (e *handshakeError) Unwrap() error { return e.err }

// errNoAddresses is a host name that resolved to nothing.
var errNoAddresses = errors.New("no such host")

// resolveError is a failed name resolution, as gRPC's resolver reports it.
type resolveError struct{ err error }

func (e *resolveError) Error() string { return e.err.Error() }
func (e *resolveError) Unwrap() error { return e.err }

// connError is an RPC's error with the typed cause of the connection
// failure under it. Its text and status are the RPC's, so the exporter's
// retry decisions do not change.
type connError struct{ rpc, cause error }

func (e *connError) Error() string              { return e.rpc.Error() }
func (e *connError) Unwrap() []error            { return []error{e.rpc, e.cause} }
func (e *connError) GRPCStatus() *status.Status { return status.Convert(e.rpc) }

// setConnCause records why the connection fails now; nil when it is up.
func (w *watch) setConnCause(err error) {
	w.mu.Lock()
	w.cause = err
	w.mu.Unlock()
}

// resolved forgets a failed name resolution once one succeeds. It keeps a
// connection failure: gRPC resolves again after each.
func (w *watch) resolved() {
	w.mu.Lock()
	defer w.mu.Unlock()
	var re *resolveError
	if errors.Is(w.cause, errNoAddresses) || errors.As(w.cause, &re) {
		w.cause = nil
	}
}

// withCause attaches the connection's failure to an RPC that failed for
// want of a connection: Unavailable from the picker, or DeadlineExceeded
// while it waited for one. While the connection is up there is no cause,
// and a server's own Unavailable stays as it is.
func (w *watch) withCause(err error) error {
	if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded {
		return err
	}
	w.mu.Lock()
	cause := w.cause
	w.mu.Unlock()
	if cause == nil {
		return err
	}
	return &connError{rpc: err, cause: cause}
}
