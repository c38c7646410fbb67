package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
	"github.com/pi-otel/pi-otel/mapper"
)

// RPC runs Pi in RPC mode behind a transparent proxy: the controller's
// bytes go to Pi's stdin and Pi's bytes to our stdout unchanged and in
// order, while an rpc.Tracker watches both directions. It returns Pi's
// exit code. See docs/rpc.md.
func RPC(env Env, args []string) int {
	cfg, argv, code := parse(env, "rpc", "[flags] -- pi --mode rpc ...", args, nil)
	if code >= 0 {
		return code
	}
	if len(argv) == 0 {
		fmt.Fprintln(env.Stderr, "pi-otel rpc: no command to run; want pi-otel rpc [flags] -- pi --mode rpc ...; see pi-otel rpc --help")
		return 2
	}
	p, err := newPipeline(env, cfg, nil)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	var opts []rpc.Option
	if c, err := newContent(cfg); err == nil && c != nil {
		opts = append(opts, rpc.WithContent(c))
	}
	tr := rpc.New(p.mapper, p.tel.TracerProvider(), opts...)
	p.countRecordsWith(func() (int64, int64) {
		s := tr.Stats()
		return s.PiRecords, s.PiMalformed
	})

	// No TRACEPARENT is reserved for Pi here: one RPC process serves many
	// runs, so no single root id would be right for what Pi starts. Pi
	// inherits the caller's TRACEPARENT, if any, like any child.
	proc, err := launch.Start(argv, launch.WithStdinPipe())
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		now := time.Now()
		tr.Close(mapper.Ending{Reason: mapper.EndExit}, now)
		p.finish(mapper.Ending{Reason: mapper.EndExit}, now)
		return launch.ExitCodeForStartError(err)
	}
	relayed, stop := superviseSignals(proc)
	defer stop()

	var g gate // traces both directions until Pi has exited

	// Controller → Pi. The controller's EOF becomes Pi's, which asks Pi to
	// shut down. If Pi exits first this goroutine stays blocked reading
	// our stdin; the process ends without it.
	go func() {
		stdin := proc.Stdin()
		in := newTap(stdin, func(rec []byte) { g.do(func() { tr.FromController(rec, time.Now()) }) })
		_, err := framing.Forward(in, env.Stdin, nil)
		in.flush()
		if err != nil && !errors.Is(err, os.ErrClosed) {
			fmt.Fprintf(env.Stderr, "pi-otel: reading the controller's input: %v\n", err)
		}
		_ = stdin.Close()
	}()

	// Pi → controller.
	stdout := proc.Stdout()
	out := &consumerWriter{w: env.Stdout, onError: func() {
		// The controller stopped reading: let Pi's next write fail too, as
		// it would without the proxy.
		_ = stdout.Close()
	}}
	piOut := newTap(out, func(rec []byte) { g.do(func() { tr.FromPi(rec, time.Now()) }) })
	status := pumpStdout(env, proc, func(r io.Reader) error {
		_, err := framing.Forward(piOut, r, nil)
		piOut.flush()
		if out.failed {
			return nil // the controller left; Pi's stdout was closed on purpose
		}
		return err
	}, func(status launch.Status) {
		g.close()
		end := ending(status, relayed())
		now := time.Now()
		tr.Close(end, now)
		p.finish(end, now)
	})
	return status.Code
}

// tap hands each record to the tracker before its bytes are written on,
// so the tracker never sees an answer before the record that caused it:
// Pi cannot answer a command it has not received, and the controller
// cannot answer a dialog it has not read.
type tap struct {
	w     io.Writer
	split *framing.Splitter
}

func newTap(w io.Writer, emit func(rec []byte)) *tap {
	return &tap{w: w, split: framing.NewSplitter(emit)}
}

func (t *tap) Write(p []byte) (int, error) {
	_, _ = t.split.Write(p)
	return t.w.Write(p)
}

// flush traces an unterminated last line, which Pi also reads as a record
// at EOF.
func (t *tap) flush() { t.split.Flush() }
