package app

import (
	"bytes"
	"context"
	"embed"
	"io"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/telemetry"
)

// demoStreams are real Pi 1.6.0 runs, captured against the test suite's
// scripted model: four parallel tools (two failing), and a 529 then a retry.
//
//go:embed demo/*.jsonl
var demoStreams embed.FS

// Demo replays the embedded captures, so a newcomer sees real traces with
// nothing installed but pi-otel. It takes replay's flags, so it can also
// check that a collector receives what pi-otel sends.
func Demo(ctx context.Context, env Env, args []string) int {
	cfg, fs, code := parse(env, "demo", "[flags]", args, nil)
	if code >= 0 {
		return code
	}
	if len(fs.Args()) != 0 {
		env.Stderr.Write([]byte("pi-otel demo: takes no arguments; see pi-otel demo --help\n"))
		return 2
	}
	files, err := demoStreams.ReadDir("demo")
	if err != nil {
		panic(err) // embedded at build time
	}
	var readers []io.Reader
	for _, f := range files {
		b, err := demoStreams.ReadFile("demo/" + f.Name())
		if err != nil {
			panic(err)
		}
		readers = append(readers, bytes.NewReader(b))
	}
	ctx, stop := env.Signals.stopContext(ctx)
	defer stop()
	return replay(ctx, env, cfg, io.MultiReader(readers...), "demo", config.Replay{})
}

// consoleToStdout: replay and demo pass no Pi output through, so their
// console tree goes to stdout, where "pi-otel demo | less" finds it; the
// status lines stay on stderr. run and rpc keep stdout for Pi alone.
func consoleToStdout(env Env) telemetry.Option {
	return telemetry.WithConsole(env.Stdout)
}
