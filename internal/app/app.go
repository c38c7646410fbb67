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
	"slices"
	"strings"
	"sync"
	"time"

	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/buildinfo"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/outfile"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/telemetry/metrics"
	"github.com/pi-otel/pi-otel/internal/telemetry/spanlogs"
	"github.com/pi-otel/pi-otel/internal/who"
	"github.com/pi-otel/pi-otel/mapper/vocab"
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
	// Signals are the process's stop signals, which main registers once;
	// nil delivers none (a test ends a command through Main's context).
	Signals *Signals
	// SDKErrors is the OpenTelemetry SDK's global error handler, which
	// main installs once; each command routes it to its pipeline. Nil
	// leaves the SDK's errors to whatever handler the process has.
	SDKErrors *telemetry.ErrorRoute
	// stderrTTY: Stderr, before Main wrapped it, is a terminal.
	stderrTTY bool
}

const usage = `pi-otel: OpenTelemetry traces and metrics for the Pi coding agent

Usage:
  pi-otel run [flags] -- pi ...                 launch Pi (its terminal UI, -p or --mode json) and trace it
  pi-otel watch [flags] [DIR...]                trace every session Pi writes, from its session files
  pi-otel rpc [flags] -- pi --mode rpc ...      trace an RPC session as a transparent proxy
  pi-otel replay [flags] FILE|-                 trace a Pi session file or a captured JSONL stream
  pi-otel report [flags] [PATH...]              cost, tokens and runs by day, model, project...; no backend
  pi-otel demo [flags]                          trace two real Pi runs shipped inside pi-otel
  pi-otel version

Start here:
  pi-otel demo                                  the demo's traces as a tree
  pi-otel run -- pi --mode json 'hello'         your own run, traced the same way
  OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 pi-otel demo
                                                send them to a collector or Jaeger instead

Run 'pi-otel COMMAND --help' for what a command does, examples and its flags.
Every flag is also an environment variable (OTEL_* or PI_OTEL_*); see
docs/configuration.md.
`

// Main runs one command and returns the process exit code. The command
// ends when ctx does as at a signal: replay, watch and demo stop and
// flush; run and rpc ask Pi to stop (SIGTERM), then flush.
func Main(ctx context.Context, env Env) int {
	// Our stderr may stall (a suspended terminal, a full pipe): writes to
	// it then give up at a deadline instead of keeping us from exiting.
	if f, ok := env.Stderr.(*os.File); ok {
		env.stderrTTY = isTerminal(f)
	}
	stderr := outfile.Wrap(env.Stderr)
	defer stderr.Close()
	env.Stderr = stderr
	applyMemoryLimit(env.MemoryLimit, env.Getenv)
	if len(env.Args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return 2
	}
	cmd, args := env.Args[0], env.Args[1:]
	switch cmd {
	case "run":
		return Run(ctx, env, args)
	case "rpc":
		return RPC(ctx, env, args)
	case "replay":
		return Replay(ctx, env, args)
	case "watch":
		return Watch(ctx, env, args)
	case "demo":
		return Demo(ctx, env, args)
	case "report":
		return Report(ctx, env, args)
	case "version", "--version":
		return printVersion(env, args)
	case "help", "-h", "--help":
		if len(args) == 1 { // "pi-otel help replay"
			return Main(ctx, Env{Args: []string{args[0], "--help"}, Stdin: env.Stdin, Stdout: env.Stdout,
				Stderr: env.Stderr, Getenv: env.Getenv})
		}
		fmt.Fprint(env.Stdout, usage)
		return 0
	}
	fmt.Fprintf(env.Stderr, "pi-otel: unknown command %q; see pi-otel --help\n", cmd)
	return 2
}

// printVersion prints what ran: version, commit, date, Go and the Pi
// releases this build is tested with (internal/buildinfo).
func printVersion(env Env, args []string) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(env.Stdout, "Usage: pi-otel version\n\nPrints pi-otel's version, the commit it was built from and when, its Go\nversion and platform, and the Pi releases it is tested with. --version is the same.\n")
		return 0
	}
	if len(args) > 0 {
		fmt.Fprintf(env.Stderr, "pi-otel: version takes no arguments, got %q; see pi-otel version --help\n", strings.Join(args, " "))
		return 2
	}
	fmt.Fprint(env.Stdout, buildinfo.Read())
	return 0
}

// parse reads a command's flags and settings. It returns the flag set,
// whose Args are those after the flags, or a usage exit code.
func parse(env Env, name, synopsis string, args []string, extra func(*flag.FlagSet)) (config.Config, *flag.FlagSet, int) {
	fs := flag.NewFlagSet("pi-otel "+name, flag.ContinueOnError)
	// The flag package would print its error and every flag; we print
	// one line that says where help is, and help only when asked for.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	config.RegisterFlags(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(env.Stdout, name, synopsis, fs)
			return config.Config{}, nil, 0
		}
		fmt.Fprintln(env.Stderr, flagError(name, fs, err))
		return config.Config{}, nil, 2
	}
	cfg, err := config.Load(fs, env.Getenv)
	if err != nil {
		// Load reports every mistake at once, one a line.
		sayLines(env.Stderr, "pi-otel: ", err)
		return config.Config{}, nil, 2
	}
	applyMemoryFlag(cfg.MemoryLimit)
	if !cfg.Quiet {
		for _, w := range cfg.Warnings {
			fmt.Fprintf(env.Stderr, "pi-otel: %s\n", w)
		}
	}
	return cfg, fs, -1
}

// pipeline is what every command shares: exporters, a mapper and a sink.
type pipeline struct {
	tel    *telemetry.Pipeline
	mapper *agentmap.Mapper
	sink   *ingest.Sink
	parent trace.SpanContext
	// content is nil unless capture is on.
	content agentmap.Content
	cfg     config.Config
	stderr  io.Writer
	// signals end the exit flush early (see finish).
	signals *Signals
	// records counts what was read from Pi, for the health metrics; rpc
	// mode reads through its tracker instead of the sink.
	recordsMu sync.Mutex
	records   func() recordCounts
	// tooLong, if set, counts the lines replay skipped for their length.
	tooLong func() int64
	// calls, if set, hands Pi's bash calls their own trace context.
	calls *callContexts
}

// recordCounts are what was read from Pi, for the health metrics:
// records, those that did not decode, and lines that held several records
// (event.SplitLine).
type recordCounts struct{ read, malformed, repaired int64 }

// countRecordsWith replaces where the health metrics read record counts.
func (p *pipeline) countRecordsWith(f func() recordCounts) {
	p.recordsMu.Lock()
	p.records = f
	p.recordsMu.Unlock()
}

func (p *pipeline) loadRecords() func() recordCounts {
	p.recordsMu.Lock()
	defer p.recordsMu.Unlock()
	return p.records
}

// newTelemetry sets up what every command exports through: the span
// metrics (when metrics are exported), Pi's events as log records, the conventions' naming, and the
// health metrics, whose record counts records reports. opts come after
// the defaults (backpressure, a span processor). The span metrics also
// take the gaps between a live call's output chunks, which the mapper
// hands them (chunks, for agentmap.WithChunkObserver).
func newTelemetry(env Env, cfg config.Config, records func() recordCounts, opts ...telemetry.Option) (_ *telemetry.Pipeline, chunks agentmap.ChunkObserver, _ error) {
	var metricOpts []metrics.Option
	var lcfg spanlogs.Config
	topts := append([]telemetry.Option{telemetry.WithStderr(env.Stderr)}, teamOnSpans(cfg)...)
	if cfg.GenAILatest { // the conventions' opt-in: the latest names, at the exit
		metricOpts, lcfg.Rename, lcfg.SchemaURL = append(metricOpts, metrics.WithGenAILatest()), vocab.Latest, vocab.LatestSchemaURL
		topts = append(topts, telemetry.WithExportedAttributes(vocab.Latest), telemetry.WithExportedSchemaURL(vocab.LatestSchemaURL))
	}
	tcfg := cfg.Config
	tcfg.ServiceVersion = buildinfo.Read().ServiceVersion()
	tcfg.ResourceAttributes = append(slices.Clip(tcfg.ResourceAttributes), who.PseudoAttribute(cfg.User, cfg.UserPseudonymKey)...)
	// Metrics exported nowhere have no reader: the span metrics would be
	// work for nothing (a report, a replay with the default exporters).
	if cfg.Metrics.Exporter != telemetry.ExporterNone {
		topts = append(topts, telemetry.WithSpanProcessor(func(mp metric.MeterProvider) (sdktrace.SpanProcessor, error) {
			sm, err := metrics.NewSpanMetrics(mp, metricOpts...)
			if err != nil {
				return nil, err
			}
			chunks = sm
			return sm, nil
		}))
	}
	tel, err := telemetry.Setup(context.Background(), tcfg, append(append(topts,
		telemetry.WithLogProcessor(func(lp otellog.LoggerProvider) (sdktrace.SpanProcessor, error) {
			return spanlogs.New(lp, lcfg), nil
		})), opts...)...)
	if err != nil {
		return nil, nil, err
	}
	// The SDK reports its own errors through the one global handler, which
	// main installed; the pipeline keeps them to one line, once, and quiet
	// under --quiet.
	env.SDKErrors.Route(tel)
	err = metrics.RegisterHealth(tel.MeterProvider(), func() metrics.Health {
		rc := records()
		t, sp := tel.Stats(), tel.SpoolStats()
		return metrics.Health{
			RecordsRead:      rc.read,
			RecordsMalformed: rc.malformed,
			RecordsRepaired:  rc.repaired,
			SpansEnded:       t.Ended,
			SpansExported:    t.Exported,
			SpansDropped:     t.Dropped,
			SpansRefused:     tel.Refused(),
			ExportFailures:   t.Failed,
			SpoolExpired:     sp.Expired,
			SpoolCorrupt:     sp.Corrupt,
		}
	}, metricOpts...)
	if err != nil {
		return nil, nil, err
	}
	return tel, chunks, nil
}

// newPipeline builds the shared pipeline; opts come after the defaults, so
// that e.g. replay can add its backpressure.
func newPipeline(env Env, cfg config.Config, clock ingest.Clock, calls *callContexts, opts ...telemetry.Option) (*pipeline, error) {
	content, err := newContent(cfg)
	if err != nil {
		return nil, err
	}
	var p *pipeline
	tel, chunks, err := newTelemetry(env, cfg, func() recordCounts { return p.loadRecords()() },
		append(opts, calls.option()...)...)
	if err != nil {
		return nil, err
	}
	parentCtx := callerContext(env)
	mopts := append([]agentmap.Option{agentmap.WithParent(parentCtx)}, calls.mapperOption()...)
	if content != nil {
		mopts = append(mopts, agentmap.WithContent(content))
	}
	if clock != nil {
		mopts = append(mopts, agentmap.WithInexactTimes()) // replay: times are rebuilt
	} else {
		mopts = append(mopts, agentmap.WithChunkObserver(chunks)) // live: records' arrival times
	}
	m := agentmap.New(tel.TracerProvider(), mopts...)
	sinkOpts := []ingest.Option{ingest.WithContent(content != nil)}
	if !cfg.Quiet { // a bad-record warning is one of our status lines too
		sinkOpts = append(sinkOpts, ingest.WithWarnings(env.Stderr))
	}
	if clock != nil {
		sinkOpts = append(sinkOpts, ingest.WithClock(clock))
	}
	p = &pipeline{
		tel:     tel,
		mapper:  m,
		sink:    ingest.New(m, sinkOpts...),
		parent:  trace.SpanContextFromContext(parentCtx),
		cfg:     cfg,
		stderr:  env.Stderr,
		content: content,
		signals: env.Signals,
		calls:   calls,
	}
	p.records = func() recordCounts {
		s := p.sink.Stats()
		return recordCounts{s.Records, s.Malformed, s.Repaired}
	}
	return p, nil
}

// childEnv reserves the next root's ids and renders them, W3C style, as
// the TRACEPARENT (and TRACESTATE) of Pi's environment. The caller's
// sampling decision and tracestate carry down unchanged: an unsampled
// caller stays unsampled through Pi's own tools.
func (p *pipeline) childEnv() []string {
	root := p.mapper.ReserveRoot(p.parent)
	flags := trace.FlagsSampled // a root of ours is always sampled
	if p.parent.IsValid() {
		flags = p.parent.TraceFlags()
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: root.TraceID(), SpanID: root.SpanID(), TraceFlags: flags, TraceState: p.parent.TraceState(),
	})
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	env := []string{"TRACEPARENT=" + carrier["traceparent"]}
	if ts := carrier["tracestate"]; ts != "" {
		env = append(env, "TRACESTATE="+ts)
	}
	return env
}

// finish closes what is open, flushes within the flush timeout, and prints
// the summary line. A signal during the flush (Ctrl-C at exit) ends the
// flush, not pi-otel, so the caller still exits with Pi's code after the
// summary, which says what was lost.
func (p *pipeline) finish(end agentmap.Ending, at time.Time) {
	// Only a signal from now on ends the flush: those before were Pi's to
	// handle, or ended the input (replay, watch).
	sigs, unsubscribe := p.signals.Subscribe()
	defer unsubscribe()
	p.mapper.Close(end, at)
	p.calls.close()
	defer shutdownAtExit(sigs, p.tel, p.cfg, p.stderr)()
	if !p.cfg.Quiet {
		if n := p.sink.Unreported(); n > 0 {
			fmt.Fprintf(p.stderr, "pi-otel: %d more bad %s not reported one by one\n", n, map[bool]string{true: "record", false: "records"}[n == 1])
		}
		fmt.Fprintln(p.stderr, p.tel.Summary()+p.inputSummary())
	}
}

// shutdownAtExit flushes and stops tel within the flush timeout, a signal
// on sigs ending the wait, and then gives stderr a short deadline for the
// summary. The caller stops the exit notice once the summary is written.
func shutdownAtExit(sigs <-chan os.Signal, tel *telemetry.Pipeline, cfg config.Config, stderr io.Writer) (stopNotice func()) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.FlushTimeout)
	defer cancel()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	setDeadline(stderr, time.Now().Add(cfg.FlushTimeout))
	stop := exitNotice(stderr, cfg, tel)
	// Running out of time is no news: the summary says what it cost.
	if err := tel.Shutdown(ctx); err != nil && !cfg.Quiet &&
		!errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		sayLines(stderr, "pi-otel: flushing telemetry: ", err)
	}
	if !cfg.Quiet {
		grace := summaryGrace
		if s, ok := stderr.(interface{ Stalled() bool }); ok && s.Stalled() {
			grace = 0 // its reader has stopped: do not wait for it again
		}
		setDeadline(stderr, time.Now().Add(grace))
	}
	return stop
}

// inputSummary says what of the input was not traced as it should be:
// records that did not decode, event types this version does not know,
// and events out of Pi's usual order (tolerated, counted).
func (p *pipeline) inputSummary() string {
	var parts []string
	add := func(n int64, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	in := p.sink.Stats()
	add(in.Malformed, "malformed record", "malformed records")
	add(in.Repaired, "line of several records read as such", "lines of several records read as such")
	if p.tooLong != nil {
		add(p.tooLong(), "line over --max-line-size skipped", "lines over --max-line-size skipped")
	}
	add(in.FieldsDropped, "field out of range dropped", "fields out of range dropped")
	m := p.mapper.Stats()
	add(m.Unknown, "event of an unknown type", "events of unknown types")
	add(m.ToolsEvicted, "open tool over the cap closed early", "open tools over the cap closed early")
	add(p.calls.missed(), "bash call without its own trace context", "bash calls without their own trace context")
	var anomalies int64
	for _, n := range m.Anomalies {
		anomalies += n
	}
	add(anomalies, "event out of order", "events out of order")
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// exitNoticeAfter is how long the flush at exit may take before pi-otel
// says what it waits for: a flush to a reachable collector is done well
// within it, so a normal exit prints nothing more.
const exitNoticeAfter = 500 * time.Millisecond

// exitNotice arms the line that says what the flush at exit waits for,
// once it has taken exitNoticeAfter; the caller stops it when the flush
// is done. Pi has ended by then, so the terminal is free for it.
func exitNotice(w io.Writer, cfg config.Config, tel *telemetry.Pipeline) (stop func()) {
	if cfg.Quiet {
		return func() {}
	}
	t := time.AfterFunc(exitNoticeAfter, func() {
		what := "the telemetry exporters"
		if dests := tel.Destinations(); len(dests) > 0 {
			what = strings.Join(dests, ", ")
		}
		fmt.Fprintf(w, "pi-otel: waiting for %s to take the last telemetry, at most %s (--flush-timeout); Ctrl-C stops waiting\n", what, cfg.FlushTimeout)
	})
	return func() { t.Stop() }
}

// summaryGrace bounds the summary line's write to a stalled stderr.
const summaryGrace = time.Second

func setDeadline(w io.Writer, t time.Time) {
	if d, ok := w.(interface{ SetDeadline(time.Time) }); ok {
		d.SetDeadline(t)
	}
}

// callerContext holds the caller's TRACEPARENT (and TRACESTATE): each
// run becomes a child of its trace.
func callerContext(env Env) context.Context {
	return propagation.TraceContext{}.Extract(context.Background(), envCarrier(env.Getenv))
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

// sayLines writes each line of err's text on stderr after prefix: Load
// and Shutdown report every problem at once, one a line.
func sayLines(w io.Writer, prefix string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "%s%s\n", prefix, line)
	}
}
