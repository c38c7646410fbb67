package app

import (
	"fmt"
	"io"
	"sync"
	"syscall"

	"github.com/pi-otel/pi-otel/internal/launch"
)

// pumpStdout runs forward over Pi's stdout until EOF and calls drained
// once Pi has exited and its own output is read (launch.Process.Pump): a
// process Pi left behind keeps its pipe, and its output still gets
// through, but the trace is Pi's and is finished when Pi is. It reports
// trouble on stderr.
func pumpStdout(env Env, proc *launch.Process, forward func(io.Reader) error, drained func(launch.Status)) launch.Status {
	status, readErr, waitErr := proc.Pump(forward, drained)
	if readErr != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: reading pi's stdout: %v\n", readErr)
	}
	if waitErr != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: waiting for pi: %v\n", waitErr)
	}
	return status
}

// gate lets the reading goroutine trace records until the trace is
// finished on another goroutine; records after that (a leftover process's
// output) pass through untraced.
type gate struct {
	mu     sync.Mutex
	closed bool
}

func (g *gate) do(f func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		f()
	}
}

// close waits for a record being traced, then stops tracing.
func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// superviseSignals relays our terminating signals to Pi and keeps a closed
// stdout from killing us (launch.Process.Supervise), so the trace still
// closes and exports.
func superviseSignals(proc *launch.Process) (relayed func() syscall.Signal, stop func()) {
	return proc.Supervise()
}
