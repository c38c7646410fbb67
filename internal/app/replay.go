package app

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/stream/follow"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/mapper"
)

// Replay traces a captured JSONL stream from a file or stdin.
func Replay(env Env, args []string) int {
	var followFile bool
	var poll time.Duration
	cfg, rest, code := parse(env, "replay", "[flags] FILE|-", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&followFile, "follow", false, "keep reading FILE as it grows, like tail -F, until interrupted")
		fs.DurationVar(&poll, "poll", 250*time.Millisecond, "with --follow, how often to look for new data")
	})
	if code >= 0 {
		return code
	}
	if len(rest) != 1 {
		fmt.Fprintln(env.Stderr, "pi-otel replay: want one FILE, or - for stdin")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var src io.Reader
	switch {
	case rest[0] == "-":
		src = env.Stdin
	case followFile:
		f, err := follow.Open(ctx, rest[0], follow.WithPoll(poll))
		if err != nil {
			fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
			return 1
		}
		defer f.Close()
		src = f
	default:
		// A FIFO waits for its writer here; a signal still ends the wait.
		f, err := follow.OpenFile(ctx, rest[0])
		if err != nil {
			fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
			return 1
		}
		defer f.Close()
		src = f
	}

	return replay(env, cfg, src, rest[0], ctx)
}

// replay traces the records of src, placing spans by the stream's own times.
func replay(env Env, cfg config.Config, src io.Reader, name string, ctx context.Context) int {
	clock := ingest.NewStreamClock(time.Now())
	// No live Pi to protect: a full export queue waits, never drops.
	p, err := newPipeline(env, cfg, clock, telemetry.WithBackpressure(ctx))
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	r := framing.NewReader(src)
	in := ingest.NewAnchored(p.sink, clock) // placed by the stream's start
	var rerr error
	for {
		rec, err := r.Next()
		if err != nil {
			if err != io.EOF {
				rerr = err
			}
			break
		}
		in.Record(rec)
	}
	in.Flush()
	if rerr != nil && ctx.Err() == nil {
		fmt.Fprintf(env.Stderr, "pi-otel: reading %s: %v\n", name, rerr)
	}
	p.finish(mapper.Ending{Reason: mapper.EndEOF}, clock.Now())
	if rerr != nil && ctx.Err() == nil {
		return 1
	}
	return 0
}
