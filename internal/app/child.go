package app

import (
	"fmt"
	"io"
	"syscall"

	"github.com/pi-otel/pi-otel/internal/launch"
)

// pumpStdout runs forward over Pi's stdout and waits for Pi to exit, not
// for an orphan holding the pipe (launch.Process.Pump), and reports
// trouble on stderr.
func pumpStdout(env Env, proc *launch.Process, forward func(io.Reader) error) launch.Status {
	status, readErr, waitErr := proc.Pump(forward)
	if readErr != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: reading pi's stdout: %v\n", readErr)
	}
	if waitErr != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: waiting for pi: %v\n", waitErr)
	}
	return status
}

// superviseSignals relays our terminating signals to Pi and keeps a closed
// stdout from killing us (launch.Process.Supervise), so the trace still
// closes and exports.
func superviseSignals(proc *launch.Process) (relayed func() syscall.Signal, stop func()) {
	return proc.Supervise()
}
