// Package app wires pi-otel's commands: it connects the framing, the
// mapper, the child process and the exporters. cmd/pi-otel only calls Main.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/telemetry/idgen"
	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/mapper"
)

// Env is the process environment, injected so tests need no globals.
type Env struct {
	Args   []string // without the program name
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// MemoryLimit is a soft limit on the Go heap for the whole process
	// (see memory.go); 0 leaves the runtime's. GOMEMLIMIT overrides it.
	MemoryLimit int64
}

const usage = `pi-otel: OpenTelemetry traces and metrics for the Pi coding agent

Usage:
  pi-otel run [flags] -- pi ...                 launch Pi (its terminal UI, -p or --mode json) and trace it
  pi-otel watch [flags] [DIR...]                trace every session Pi writes, from its session files
  pi-otel rpc [flags] -- pi --mode rpc ...      trace an RPC session as a transparent proxy
  pi-otel replay [flags] FILE|-                 trace a Pi session file or a captured JSONL stream
  pi-otel demo [flags]                          trace two real Pi runs shipped inside pi-otel
  pi-otel version

Run 'pi-otel COMMAND -h' for a command's flags. Every flag is also an
environment variable (OTEL_* or PI_OTEL_*); see docs/configuration.md.
`

// Version is set at build time with -ldflags "-X github.com/pi-otel/pi-otel/app.Version=…".
var Version = "dev"

// Main runs one command and returns the process exit code.
func Main(env Env) int {
	applyMemoryLimit(env.MemoryLimit, env.Getenv)
	if len(env.Args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return 2
	}
	cmd, args := env.Args[0], env.Args[1:]
	switch cmd {
	case "run":
		return Run(env, args)
	case "rpc":
		return RPC(env, args)
	case "replay":
		return Replay(env, args)
	case "watch":
		return Watch(env, args)
	case "demo":
		return Demo(env, args)
	case "version", "--version":
		fmt.Fprintln(env.Stdout, "pi-otel", Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return 0
	}
	fmt.Fprintf(env.Stderr, "pi-otel: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// parse reads a command's flags and settings. It returns the arguments
// after the flags, or a usage exit code.
func parse(env Env, name, synopsis string, args []string, extra func(*flag.FlagSet)) (config.Config, []string, int) {
	fs := flag.NewFlagSet("pi-otel "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.Stderr, "Usage: pi-otel %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
	}
	config.RegisterFlags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config.Config{}, nil, 0
		}
		return config.Config{}, nil, 2
	}
	cfg, err := config.Load(fs, env.Getenv)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return config.Config{}, nil, 2
	}
	return cfg, fs.Args(), -1
}

// pipeline is what every command shares: exporters, a mapper and a sink.
type pipeline struct {
	tel    *telemetry.Telemetry
	ids    *idgen.Reserving
	mapper *mapper.Mapper
	sink   *ingest.Sink
	parent trace.SpanContext
	// parentCtx holds parent; content is nil unless capture is on.
	parentCtx context.Context
	content   mapper.Content
	cfg       config.Config
	stderr    io.Writer
	// records counts what was read from Pi, for the health metrics; rpc
	// mode reads through its tracker instead of the sink.
	recordsMu sync.Mutex
	records   func() (read, malformed int64)
}

// countRecordsWith replaces where the health metrics read record counts.
func (p *pipeline) countRecordsWith(f func() (read, malformed int64)) {
	p.recordsMu.Lock()
	p.records = f
	p.recordsMu.Unlock()
}

func (p *pipeline) loadRecords() func() (int64, int64) {
	p.recordsMu.Lock()
	defer p.recordsMu.Unlock()
	return p.records
}

// newPipeline builds the shared pipeline; opts come after the defaults, so
// that e.g. a session file's replay can give its own id generator.
func newPipeline(env Env, cfg config.Config, clock ingest.Clock, opts ...telemetry.Option) (*pipeline, error) {
	ids := idgen.New()
	content, err := newContent(cfg)
	if err != nil {
		return nil, err
	}
	tel, err := telemetry.Setup(context.Background(), cfg, append([]telemetry.Option{
		telemetry.WithStderr(env.Stderr),
		telemetry.WithIDGenerator(ids),
		telemetry.WithSpanProcessor(func(mp metric.MeterProvider) (sdktrace.SpanProcessor, error) {
			return metrics.NewSpanMetrics(mp)
		})}, opts...)...)
	if err != nil {
		return nil, err
	}
	// The caller's TRACEPARENT makes each run a child of its trace.
	parentCtx := propagation.TraceContext{}.Extract(context.Background(), envCarrier(env.Getenv))
	mopts := []mapper.Option{mapper.WithParent(parentCtx)}
	if content != nil {
		mopts = append(mopts, mapper.WithContent(content))
	}
	if clock != nil {
		mopts = append(mopts, mapper.WithInexactTimes()) // replay: times are rebuilt
	}
	m := mapper.New(tel.TracerProvider(), mopts...)
	sinkOpts := []ingest.Option{ingest.WithContent(content != nil)}
	if !cfg.Quiet { // a bad-record warning is one of our status lines too
		sinkOpts = append(sinkOpts, ingest.WithWarnings(env.Stderr))
	}
	if clock != nil {
		sinkOpts = append(sinkOpts, ingest.WithClock(clock))
	}
	p := &pipeline{
		tel:       tel,
		ids:       ids,
		mapper:    m,
		sink:      ingest.New(m, sinkOpts...),
		parent:    trace.SpanContextFromContext(parentCtx),
		parentCtx: parentCtx,
		cfg:       cfg,
		stderr:    env.Stderr,
	}
	if content != nil {
		p.content = content
	}
	p.records = func() (int64, int64) {
		s := p.sink.Stats()
		return s.Records, s.Malformed
	}
	err = metrics.RegisterHealth(tel.MeterProvider(), func() metrics.Health {
		read, malformed := p.loadRecords()()
		t := tel.Stats()
		return metrics.Health{
			RecordsRead:      read,
			RecordsMalformed: malformed,
			SpansEnded:       t.Ended,
			SpansExported:    t.Exported,
			SpansDropped:     t.Dropped,
			ExportFailures:   t.Failed,
		}
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// traceparent reserves the next root's ids and renders them as the W3C
// header value for Pi's environment.
func (p *pipeline) traceparent() string {
	tid, sid := p.ids.Reserve(p.parent)
	return fmt.Sprintf("00-%s-%s-01", tid, sid)
}

// finish closes what is open, flushes within the flush timeout, and prints
// the summary line.
func (p *pipeline) finish(end mapper.Ending, at time.Time) {
	p.mapper.Close(end, at)
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.FlushTimeout)
	defer cancel()
	if err := p.tel.Shutdown(ctx); err != nil && !p.cfg.Quiet {
		fmt.Fprintf(p.stderr, "pi-otel: flushing telemetry: %v\n", err)
	}
	if !p.cfg.Quiet {
		fmt.Fprintln(p.stderr, p.tel.Summary())
	}
}

// envCarrier reads TRACEPARENT and TRACESTATE from the environment, the
// convention W3C-aware CLIs share.
type envCarrier func(string) string

func (e envCarrier) Get(key string) string { return e(strings.ToUpper(key)) }
func (e envCarrier) Set(string, string)    {}
func (e envCarrier) Keys() []string        { return []string{"traceparent", "tracestate"} }

// OSEnv is the real process environment.
func OSEnv() Env {
	return Env{Args: os.Args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, MemoryLimit: defaultMemoryLimit}
}
