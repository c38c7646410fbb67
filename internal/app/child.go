package app

import (
	"context"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// parseChild reads the flags of a command that runs Pi as its child (run,
// rpc): a command line must follow them; want shows one.
func parseChild(env Env, name, synopsis, want string, args []string) (config.Config, []string, int) {
	cfg, fs, code := parse(env, name, synopsis, args, nil)
	if code >= 0 {
		return cfg, nil, code
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintf(env.Stderr, "pi-otel %s: no command to run; want pi-otel %s %s; see pi-otel %s --help\n", name, name, want, name)
		return cfg, nil, 2
	}
	return cfg, argv, -1
}

// tracedChild is what run and rpc share around Pi's process: they differ
// only in how its records reach the trace.
type tracedChild struct {
	argv []string
	opts []launch.Option
	// started runs once Pi does, before its stdout is read; g is open
	// until Pi has exited.
	started func(proc *launch.Process, g *gate)
	// forward copies Pi's stdout r to out, tracing records through g.
	forward func(out io.Writer, r io.Reader, g *gate) error
	// close ends the trace, also when Pi did not start.
	close func(end agentmap.Ending, at time.Time)
}

// run starts Pi, passes its stdout on to ours while tracing it, and
// returns Pi's exit code once the trace is closed.
func (c tracedChild) run(ctx context.Context, env Env) int {
	proc, err := launch.Start(c.argv, c.opts...)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		c.close(agentmap.Ending{Reason: vocab.EndExit}, time.Now())
		return launch.ExitCodeForStartError(err)
	}
	relayed, stop := superviseSignals(ctx, proc)
	defer stop()

	var g gate
	if c.started != nil {
		c.started(proc, &g)
	}
	stdout := proc.Stdout()
	out := &consumerWriter{w: env.Stdout, onError: func() {
		// Our consumer stopped reading: let Pi's next write fail too, as
		// it would without pi-otel in the pipe.
		_ = stdout.Close()
	}}
	// Pump calls its second func once Pi has exited and its own output
	// is read: a process Pi left behind keeps its pipe, and its output
	// still gets through, but the trace is Pi's and is finished when Pi
	// is.
	status, readErr, waitErr := proc.Pump(func(r io.Reader) error {
		err := c.forward(out, r, &g)
		if out.failed {
			return nil // our consumer left; Pi's stdout was closed on purpose
		}
		return err
	}, func(status launch.Status) {
		g.close()
		c.close(ending(status, relayed()), time.Now())
	})
	if readErr != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: reading pi's stdout: %v\n", readErr)
	}
	if waitErr != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: waiting for pi: %v\n", waitErr)
	}
	return status.Code
}

// ending says why Pi's stream stopped, for a run that did not settle. Pi
// handles SIGTERM and SIGHUP itself and exits with 128+N, so a relayed
// signal followed by that code is a death by signal though Pi exited.
func ending(s launch.Status, relayed syscall.Signal) agentmap.Ending {
	if s.Signal == 0 && relayed != 0 && s.Code == 128+int(relayed) {
		return agentmap.Ending{Reason: vocab.EndSignal, ExitCode: s.Code, Signal: launch.SignalName(relayed)}
	}
	if s.Signal != 0 {
		return agentmap.Ending{Reason: vocab.EndSignal, ExitCode: s.Code, Signal: launch.SignalName(s.Signal)}
	}
	return agentmap.Ending{Reason: vocab.EndExit, ExitCode: s.Code}
}

// consumerWriter notices the first failed write to our stdout.
type consumerWriter struct {
	w       io.Writer
	onError func()
	failed  bool
}

func (c *consumerWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil && !c.failed {
		c.failed = true
		c.onError()
	}
	return n, err
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
// closes and exports. When ctx ends, Pi is asked to stop with SIGTERM, as
// if pi-otel had been sent one.
func superviseSignals(ctx context.Context, proc *launch.Process) (relayed func() syscall.Signal, stop func()) {
	relayed, stopSupervising := proc.Supervise()
	stopAfter := context.AfterFunc(ctx, func() { _ = proc.Signal(syscall.SIGTERM) })
	return relayed, func() {
		stopAfter()
		stopSupervising()
	}
}
