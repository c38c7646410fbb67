package telemetry

import "sync/atomic"

// ErrorRoute is an otel.ErrorHandler that passes each error to the
// Pipeline routed to it last. The SDK reports some errors (a failed
// metric export, a log batch it could not send) only through the global
// handler: main installs one ErrorRoute as that handler, once, and each
// command routes it to its Pipeline, so library code sets no global.
type ErrorRoute struct {
	p atomic.Pointer[Pipeline]
}

// Route sends the errors from now on to p. It does nothing on a nil
// ErrorRoute: then they go wherever the process's global handler sends
// them.
func (r *ErrorRoute) Route(p *Pipeline) {
	if r != nil {
		r.p.Store(p)
	}
}

// Handle implements otel.ErrorHandler. An error that comes before any
// Pipeline is routed is dropped: no SDK part of ours exists yet.
func (r *ErrorRoute) Handle(err error) {
	if p := r.p.Load(); p != nil {
		p.Handle(err)
	}
}
