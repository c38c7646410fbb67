package app

import (
	"context"
	"fmt"
	"io"

	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// Run launches Pi, passes its stdout through byte for byte while tracing
// it, and returns Pi's exit code.
func Run(ctx context.Context, env Env, args []string) int {
	cfg, argv, code := parseChild(env, "run", "[flags] -- pi [--mode json] ...", "[flags] -- pi --mode json ...", args)
	if code >= 0 {
		return code
	}
	// Pi's TUI and -p text output go to the terminal; their runs are
	// traced from the session files instead of the stream.
	if m := piMode(argv[1:]); m != "json" && m != "rpc" && sessionwatch.IsPiCommand(argv) {
		return runTUI(ctx, env, cfg, argv)
	}
	cc := openCallContexts(env, cfg)
	p, err := newPipeline(env, cfg, nil, cc, liveFacts(argv, ".")...)
	if err != nil {
		cc.close()
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	return tracedChild{
		argv:    argv,
		opts:    []launch.Option{launch.WithEnv(append(p.childEnv(), cc.env(env.Getenv)...)...)},
		started: func(proc *launch.Process, _ *gate) { cc.followStream(proc) },
		forward: func(out io.Writer, r io.Reader, g *gate) error {
			_, err := framing.Forward(out, r, func(rec []byte) {
				g.do(func() { p.sink.Record(rec) })
			})
			return err
		},
		close: p.finish,
	}.run(ctx, env)
}
