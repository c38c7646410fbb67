package app

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
	"github.com/pi-otel/pi-otel/mapper"
)

// Run launches Pi, passes its stdout through byte for byte while tracing
// it, and returns Pi's exit code.
func Run(env Env, args []string) int {
	cfg, argv, code := parse(env, "run", "[flags] -- pi [--mode json] ...", args, nil)
	if code >= 0 {
		return code
	}
	if len(argv) == 0 {
		fmt.Fprintln(env.Stderr, "pi-otel run: no command; usage: pi-otel run [flags] -- pi --mode json ...")
		return 2
	}
	// Pi's TUI and -p text output go to the terminal; their runs are
	// traced from the session files instead of the stream.
	if m := piMode(argv[1:]); m != "json" && m != "rpc" && sessionwatch.IsPiCommand(argv) {
		return runTUI(env, cfg, argv)
	}
	p, err := newPipeline(env, cfg, nil)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	proc, err := launch.Start(argv, launch.WithEnv("TRACEPARENT="+p.traceparent()))
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		p.finish(mapper.Ending{Reason: mapper.EndExit}, time.Now())
		return launch.ExitCodeForStartError(err)
	}
	relayed, stop := superviseSignals(proc)
	defer stop()

	stdout := proc.Stdout()
	out := &consumerWriter{w: env.Stdout, onError: func() {
		// Behave as Pi would in this pipe: its next write fails too.
		_ = stdout.Close()
	}}
	status := pumpStdout(env, proc, func(r io.Reader) error {
		_, err := framing.Forward(out, r, p.sink.Record)
		if out.failed {
			return nil // our consumer left; Pi's stdout was closed on purpose
		}
		return err
	})
	p.finish(ending(status, relayed()), time.Now())
	return status.Code
}

// superviseSignals relays our terminating signals to Pi and makes a write
// to a closed stdout return EPIPE instead of killing us, so the trace still
// closes and exports. relayed reports the last signal passed on to Pi.
func superviseSignals(proc *launch.Process) (relayed func() syscall.Signal, stop func()) {
	var last atomic.Int32
	stopForward := proc.ForwardSignals(launch.WithSignalObserver(func(ev launch.SignalEvent) {
		if ev.Action == launch.SignalForwarded {
			last.Store(int32(ev.Signal))
		}
	}))
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	return func() syscall.Signal { return syscall.Signal(last.Load()) }, func() {
		signal.Stop(pipe)
		stopForward()
	}
}

// ending says why Pi's stream stopped, for a run that did not settle. Pi
// handles SIGTERM and SIGHUP itself and exits with 128+N, so a relayed
// signal followed by that code is a death by signal though Pi exited.
func ending(s launch.Status, relayed syscall.Signal) mapper.Ending {
	if s.Signal == 0 && relayed != 0 && s.Code == 128+int(relayed) {
		return mapper.Ending{Reason: mapper.EndSignal, ExitCode: s.Code, Signal: signalName(relayed)}
	}
	if s.Signal != 0 {
		return mapper.Ending{Reason: mapper.EndSignal, ExitCode: s.Code, Signal: signalName(s.Signal)}
	}
	return mapper.Ending{Reason: mapper.EndExit, ExitCode: s.Code}
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	}
	return fmt.Sprintf("signal %d", int(s))
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
