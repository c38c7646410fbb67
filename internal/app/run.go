package app

import (
	"fmt"
	"io"
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
		fmt.Fprintln(env.Stderr, "pi-otel run: no command to run; want pi-otel run [flags] -- pi --mode json ...; see pi-otel run --help")
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
	proc, err := launch.Start(argv, launch.WithEnv(p.childEnv()...))
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
	var g gate
	record := func(rec []byte) { g.do(func() { p.sink.Record(rec) }) }
	status := pumpStdout(env, proc, func(r io.Reader) error {
		_, err := framing.Forward(out, r, record)
		if out.failed {
			return nil // our consumer left; Pi's stdout was closed on purpose
		}
		return err
	}, func(status launch.Status) {
		g.close()
		p.finish(ending(status, relayed()), time.Now())
	})
	return status.Code
}

// ending says why Pi's stream stopped, for a run that did not settle. Pi
// handles SIGTERM and SIGHUP itself and exits with 128+N, so a relayed
// signal followed by that code is a death by signal though Pi exited.
func ending(s launch.Status, relayed syscall.Signal) mapper.Ending {
	if s.Signal == 0 && relayed != 0 && s.Code == 128+int(relayed) {
		return mapper.Ending{Reason: mapper.EndSignal, ExitCode: s.Code, Signal: launch.SignalName(relayed)}
	}
	if s.Signal != 0 {
		return mapper.Ending{Reason: mapper.EndSignal, ExitCode: s.Code, Signal: launch.SignalName(s.Signal)}
	}
	return mapper.Ending{Reason: mapper.EndExit, ExitCode: s.Code}
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
