package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// RPC runs Pi in RPC mode behind a transparent proxy: the controller's
// bytes go to Pi's stdin and Pi's bytes to our stdout unchanged and in
// order, while an rpc.Tracker watches both directions. It returns Pi's
// exit code. See docs/rpc.md.
func RPC(ctx context.Context, env Env, args []string) int {
	cfg, argv, code := parseChild(env, "rpc", "[flags] -- pi --mode rpc ...", "[flags] -- pi --mode rpc ...", args)
	if code >= 0 {
		return code
	}
	cc := openCallContexts(env, cfg)
	p, err := newPipeline(env, cfg, nil, cc, liveFacts(argv, ".")...)
	if err != nil {
		cc.close()
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	var opts []rpc.Option
	if p.content != nil {
		opts = append(opts, rpc.WithContent(p.content))
	}
	if cc != nil {
		opts = append(opts, rpc.WithBashAnswered(cc.bashAnswered))
	}
	tr := rpc.New(p.mapper, p.tel.TracerProvider(), opts...)
	p.countRecordsWith(func() recordCounts {
		s := tr.Stats()
		return recordCounts{read: s.PiRecords, malformed: s.PiMalformed}
	})

	// No TRACEPARENT is reserved for Pi here: one RPC process serves many
	// runs, so no single root id would be right for what Pi starts. Pi
	// inherits the caller's TRACEPARENT, if any, like any child, and each
	// bash call gets its own call's context through the hook.
	return tracedChild{
		argv: argv,
		opts: []launch.Option{launch.WithStdinPipe(), launch.WithEnv(cc.env(env.Getenv)...)},
		// Controller → Pi. The controller's EOF becomes Pi's, which asks
		// Pi to shut down. If Pi exits first this goroutine stays blocked
		// reading our stdin; the process ends without it.
		started: func(proc *launch.Process, g *gate) {
			cc.followStream(proc)
			go func() {
				stdin := proc.Stdin()
				in := newTap(stdin, func(rec []byte) {
					g.do(func() {
						tr.FromController(rec, time.Now())
						cc.controller(rec)
					})
				})
				_, err := framing.Forward(in, env.Stdin, nil)
				in.flush()
				if err != nil && !errors.Is(err, os.ErrClosed) {
					fmt.Fprintf(env.Stderr, "pi-otel: reading the controller's input: %v\n", err)
				}
				_ = stdin.Close()
			}()
		},
		// Pi → controller.
		forward: func(out io.Writer, r io.Reader, g *gate) error {
			piOut := newTap(out, func(rec []byte) {
				g.do(func() {
					tr.FromPi(rec, time.Now())
				})
			})
			_, err := framing.Forward(piOut, r, nil)
			piOut.flush()
			return err
		},
		close: func(end agentmap.Ending, at time.Time) {
			tr.Close(end, at)
			p.finish(end, at)
		},
	}.run(ctx, env)
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
