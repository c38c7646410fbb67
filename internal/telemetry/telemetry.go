// Package telemetry builds pi-otel's OpenTelemetry pipeline from its
// Config: a TracerProvider, a MeterProvider and, when asked for, a
// LoggerProvider (Pi's events as log records), whose output goes to an
// OTLP collector (grpc or http/protobuf), to stderr (a tree of spans, a
// compact metrics listing), to a file of OTLP/JSON lines, or nowhere.
//
// Exporting never holds up the producer. Spans wait in a bounded queue and
// are exported in batches by one goroutine; when the queue is full, new spans
// are dropped and counted (Stats). The OTLP exporters retry with backoff, so
// a collector that starts while pi-otel runs still gets the spans. The first
// failure to reach a destination is reported once on stderr, with the fix.
// Shutdown flushes within the configured flush timeout, and gives up at once
// if the collector turns out to be unreachable at exit.
//
// Metrics are CUMULATIVE by default, and every process gets its own random
// service.instance.id unless the user names one. Measured through a real
// Collector and Prometheus (docs/operations.md), deltas from many
// short-lived processes sharing one stream are not added up by the
// Collector's prometheus exporter: it keeps the last process's value or
// drops misaligned points. One stream per process, cumulative, is what that
// path stores correctly; the shipped recording rules count each new series
// whole.
//
// Shutdown ends the traces first, the logs second and the metrics last, so observable
// instruments reading Stats see the final counts in the last metric export.
//
// Nothing here writes to stdout, which belongs to Pi, unless WithConsole
// asks for it (replay and demo). The SDK reports some
// errors through otel.Handle; install the Telemetry as the global error
// handler (otel.SetErrorHandler(t)) to route them into the same once-only
// stderr line.
package telemetry

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/internal/outfile"
	"github.com/pi-otel/pi-otel/internal/telemetry/consoletree"
	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
	"github.com/pi-otel/pi-otel/internal/telemetry/spool"
)

// Option configures Setup.
type Option = option.Option[options]

type options struct {
	stderr io.Writer
	// console, when set, takes the console exporters' output instead of
	// stderr (see WithConsole).
	console io.Writer
	res     *resource.Resource
	retry   Retry
	color   *bool
	ids     sdktrace.IDGenerator
	procs   []func(metric.MeterProvider) (sdktrace.SpanProcessor, error)
	// rename rewrites the attributes of exported spans (WithExportedAttributes).
	rename func([]attribute.KeyValue) []attribute.KeyValue
	// logProcs are built only when logs are on (see WithLogProcessor).
	logProcs []func(log.LoggerProvider) (sdktrace.SpanProcessor, error)
	// backpressure, when set, makes a full queue wait instead of drop
	// while it is live (see WithBackpressure).
	backpressure context.Context
}

// WithBackpressure makes span export hold up the producer instead of
// dropping spans when the queue is full, while ctx is live: replay and
// watch have no live Pi to protect, so they must lose nothing. Once ctx
// is done (a signal), a full queue drops and counts again, so nothing
// can keep pi-otel from exiting. run and rpc never use it: Pi comes first.
func WithBackpressure(ctx context.Context) Option {
	return option.Func[options](func(o *options) { o.backpressure = ctx })
}

// WithIDGenerator sets how span and trace ids are made (pi-otel reserves
// the next root's ids to put them in Pi's TRACEPARENT).
func WithIDGenerator(g sdktrace.IDGenerator) Option {
	return option.Func[options](func(o *options) { o.ids = g })
}

// WithSpanProcessor adds a processor built on the pipeline's meter provider,
// such as the one that derives metrics from finished spans. It sees every
// span before export.
func WithSpanProcessor(build func(metric.MeterProvider) (sdktrace.SpanProcessor, error)) Option {
	return option.Func[options](func(o *options) { o.procs = append(o.procs, build) })
}

// WithStderr sets where pi-otel's own output goes: the console exporters,
// "-" files and the warnings. The default is os.Stderr.
func WithStderr(w io.Writer) Option {
	return option.Func[options](func(o *options) { o.stderr = w })
}

// WithConsole sends the console exporters' output (the span tree, the
// metrics listing) to w rather than to stderr; the warnings stay on
// stderr. Replay and demo use it for stdout, which carries no Pi output
// there, so that "pi-otel demo | less" shows the tree.
func WithConsole(w io.Writer) Option {
	return option.Func[options](func(o *options) { o.console = w })
}

// WithResource merges r over the resource built from the configuration.
func WithResource(r *resource.Resource) Option {
	return option.Func[options](func(o *options) { o.res = r })
}

// WithRetry tunes the OTLP exporters' retry. The default is the exporters'
// own: 5s initial interval, 30s at most between attempts, 1m in all.
func WithRetry(r Retry) Option {
	return option.Func[options](func(o *options) { o.retry = r })
}

// WithColor forces colour in the console tree on or off. By default it is
// on when stderr is a terminal and NO_COLOR is unset.
func WithColor(on bool) Option {
	return option.Func[options](func(o *options) { o.color = &on })
}

// Telemetry is a running pipeline.
type Telemetry struct {
	cfg Config
	rep *reporter

	tp  *sdktrace.TracerProvider
	api trace.TracerProvider // tp, or tp cutting span event attributes too
	mp  *sdkmetric.MeterProvider
	lp  *sdklog.LoggerProvider // nil when logs are off

	counters    *counters
	batcher     *batcher // nil when spans are not exported
	traceWatch  *watch   // nil unless traces go to OTLP
	metricWatch *watch   // nil unless metrics go to OTLP
	logWatch    *watch   // nil unless logs go to OTLP
	traceDest   string
	logDest     string
	logCount    *countedLogs // log records exported and failed; nil when logs are off
	logsDone    atomic.Bool  // the logs are shut down: what was not exported is lost
	closers     []io.Closer
	files       []*outfile.Writer // output files, bounded by the flush at shutdown

	// spool keeps what OTLP could not deliver; spoolDone reports the
	// sending of earlier processes' spans, which spoolStop ends.
	spool     *spool.Spool
	spoolDone chan struct{}
	spoolStop context.CancelFunc
	// spoolWaiting says spans may wait in the spool; spoolKick wakes its
	// sender when the collector takes a batch; spoolEnding ends it once
	// its pass is done.
	spoolWaiting atomic.Bool
	spoolKick    chan struct{}
	spoolEnding  chan struct{}

	shutdownOnce sync.Once
	shutdownErr  error
}

// Setup builds the pipeline. It does not connect to anything: OTLP
// exporters connect on their first export, so a missing collector shows up
// later, once, on stderr, rather than here.
func Setup(ctx context.Context, cfg Config, opts ...Option) (_ *Telemetry, err error) {
	o := option.Apply(options{stderr: os.Stderr, retry: defaultRetry}, opts)
	cfg = withDefaults(cfg)
	t := &Telemetry{cfg: cfg, rep: newReporter(o.stderr, cfg.Quiet), counters: newCounters()}
	defer func() {
		if err != nil {
			if t.batcher != nil {
				stopped, cancel := context.WithCancel(context.Background())
				cancel()
				_ = t.batcher.Shutdown(stopped)
			}
			if t.lp != nil {
				stopped, cancel := context.WithCancel(context.Background())
				cancel()
				_ = t.lp.Shutdown(stopped)
			}
			_ = t.closeAll()
		}
	}()

	res, err := buildResource(ctx, cfg, o.res)
	if err != nil {
		return nil, err
	}

	reader, err := t.setupMetrics(ctx, cfg, o)
	if err != nil {
		return nil, fmt.Errorf("setting up the %s metrics exporter: %w", cfg.Metrics.Exporter, err)
	}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if reader != nil {
		mopts = append(mopts, sdkmetric.WithReader(reader))
	}
	t.mp = sdkmetric.NewMeterProvider(mopts...)

	if err := t.setupLogs(ctx, cfg, o, res); err != nil {
		return nil, fmt.Errorf("setting up the %s logs exporter: %w", cfg.Logs.Exporter, err)
	}

	proc, err := t.setupTraces(ctx, cfg, o)
	if err != nil {
		return nil, fmt.Errorf("setting up the %s traces exporter: %w", cfg.Traces.Exporter, err)
	}
	if o.rename != nil {
		proc = renaming{SpanProcessor: proc, f: o.rename}
	}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
		// Explicit limits: the SDK's defaults, but the attribute value
		// length from config.Config (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT and
		// its flag, one parse path), not read by the SDK on its own.
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit:   attributeLimit(cfg.AttributeValueLengthLimit),
			AttributeValueDepthLimit:    sdktrace.DefaultAttributeValueDepthLimit,
			AttributeCountLimit:         sdktrace.DefaultAttributeCountLimit,
			EventCountLimit:             sdktrace.DefaultEventCountLimit,
			LinkCountLimit:              sdktrace.DefaultLinkCountLimit,
			AttributePerEventCountLimit: sdktrace.DefaultAttributePerEventCountLimit,
			AttributePerLinkCountLimit:  sdktrace.DefaultAttributePerLinkCountLimit,
		}),
		sdktrace.WithSpanProcessor(proc),
	}
	if o.ids != nil {
		tpOpts = append(tpOpts, sdktrace.WithIDGenerator(o.ids))
	}
	for _, build := range o.procs {
		p, err := build(t.mp)
		if err != nil {
			return nil, err
		}
		tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(p))
	}
	if t.lp != nil {
		for _, build := range o.logProcs {
			p, err := build(t.lp)
			if err != nil {
				return nil, err
			}
			tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(p))
		}
	}
	t.tp = sdktrace.NewTracerProvider(tpOpts...)
	t.api = t.tp
	if n := cfg.AttributeValueLengthLimit; n > 0 {
		t.api = limitedProvider{tp: t.tp, limit: n}
	}

	return t, nil
}

func buildResource(ctx context.Context, cfg Config, extra *resource.Resource) (*resource.Resource, error) {
	attrs := append([]attribute.KeyValue{semconv.ServiceName(cfg.ServiceName)}, cfg.ResourceAttributes...)
	if !hasKey(cfg.ResourceAttributes, semconv.ServiceInstanceIDKey) {
		// One metric stream per process: see the package comment.
		attrs = append(attrs, semconv.ServiceInstanceID(newInstanceID()))
	}
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithTelemetrySDK(),
		resource.WithAttributes(attrs...),
	)
	if err != nil {
		return nil, fmt.Errorf("building the resource: %w", err)
	}
	if extra == nil {
		return res, nil
	}
	merged, err := resource.Merge(res, extra)
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("building the resource: %w", err)
	}
	// A schema conflict still yields every attribute, without a schema.
	return merged, nil
}

func (t *Telemetry) setupTraces(ctx context.Context, cfg Config, o options) (sdktrace.SpanProcessor, error) {
	var exp sdktrace.SpanExporter
	switch cfg.Traces.Exporter {
	case config.ExporterNone:
		t.traceDest = "none (not exported)"
		return countOnly{t.counters}, nil
	case config.ExporterConsole:
		t.traceDest = "console (stderr)"
		out := o.consoleOut()
		if out != o.stderr {
			t.traceDest = "console (stdout)"
		}
		color := consoletree.ColorFor(out, cfg.NoColor)
		if o.color != nil {
			color = *o.color
		}
		exp = consoletree.New(out, consoletree.WithColor(color))
	case config.ExporterFile:
		w, name, err := t.open(cfg.Traces.File, o.stderr)
		if err != nil {
			return nil, err
		}
		t.traceDest = "file " + name
		exp = otlpfile.NewTraceExporter(w)
	case config.ExporterOTLP:
		ot := cfg.Traces.OTLP
		t.traceDest = otlpDest(ot)
		t.traceWatch = t.newWatch("traces", ot, noCollectorHint(ot, "--traces-exporter console"))
		var err error
		var client otlptrace.Client
		if exp, client, err = newOTLPTraceExporter(ctx, ot, o.retry, t.traceWatch); err != nil {
			return nil, err
		}
		t.startSpool(cfg.Spool, client)
	default:
		return nil, fmt.Errorf("unknown exporter %q", cfg.Traces.Exporter)
	}
	var bopts []batcherOption
	if o.backpressure != nil {
		bopts = append(bopts, blockWhile(o.backpressure))
	}
	if t.traceWatch != nil {
		bopts = append(bopts, retainWhile(t.traceWatch.isDown, retainPause))
	}
	if t.spool != nil {
		bopts = append(bopts, keepFailed(t.keep), onDelivered(t.spoolDelivered))
	}
	onError := t.exportErrors("traces", "traces", t.traceDest, t.traceWatch)
	t.batcher = newBatcher(exp, cfg.Batch, t.counters, onError, bopts...)
	return t.batcher, nil
}

func (t *Telemetry) setupMetrics(ctx context.Context, cfg Config, o options) (sdkmetric.Reader, error) {
	temporality := temporalitySelector(cfg.Temporality)
	var exp sdkmetric.Exporter
	var dest string
	var w *watch
	timeout := config.DefaultOTLPTimeout
	switch cfg.Metrics.Exporter {
	case config.ExporterNone:
		return nil, nil
	case config.ExporterConsole:
		dest = "console"
		exp = &consoleMetrics{w: o.consoleOut(), Selectors: otlpfile.Selectors{TemporalitySelector: temporality}}
	case config.ExporterFile:
		out, name, err := t.open(cfg.Metrics.File, o.stderr)
		if err != nil {
			return nil, err
		}
		dest = "file " + name
		exp = otlpfile.NewMetricExporter(out, otlpfile.WithTemporalitySelector(temporality))
	case config.ExporterOTLP:
		om := cfg.Metrics.OTLP
		dest = otlpDest(om)
		w = t.newWatch("metrics", om, noCollectorHint(om, "--metrics-exporter none"))
		t.metricWatch = w
		timeout = om.Timeout
		var err error
		if exp, err = newOTLPMetricExporter(ctx, om, o.retry, w, temporality); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown exporter %q", cfg.Metrics.Exporter)
	}
	onError := t.exportErrors("metrics", "metrics", dest, w)
	return sdkmetric.NewPeriodicReader(observedMetrics{Exporter: exp, onError: onError},
		sdkmetric.WithInterval(cfg.MetricsInterval),
		sdkmetric.WithTimeout(timeout),
	), nil
}

func otlpDest(o config.OTLP) string { return fmt.Sprintf("otlp %s %s", o.Protocol, o.Target()) }

// newWatch watches a signal's OTLP exporter; hint is the way out when
// nothing answers.
func (t *Telemetry) newWatch(signal string, o config.OTLP, hint string) *watch {
	return &watch{rep: t.rep, dest: destination{signal: signal, host: hostOf(o.Endpoint), target: o.Target(), hint: hint}}
}

// exportErrors reports a signal's failed exports of what (its data, as the
// message names it): through w when it goes to OTLP, which explains them,
// else once per destination.
func (t *Telemetry) exportErrors(signal, what, dest string, w *watch) func(error) {
	return func(err error) {
		switch {
		case cancelled(err):
		case w != nil:
			w.observe(err)
		default:
			t.rep.once(signal+" "+dest, fmt.Sprintf("exporting %s to %s failed: %v", what, dest, err))
		}
	}
}

// noCollectorHint is the way out when nothing answers at the endpoint:
// naming an endpoint if none was, else checking the one that was.
func noCollectorHint(o config.OTLP, instead string) string {
	if o.EndpointFrom == "" {
		return "that is the default endpoint; set OTEL_EXPORTER_OTLP_ENDPOINT or --endpoint, or use " + instead
	}
	return fmt.Sprintf("the endpoint comes from %s: start a collector there or fix it, or use %s", o.EndpointFrom, instead)
}

func (o options) consoleOut() io.Writer {
	if o.console != nil {
		return o.console
	}
	return o.stderr
}

// open opens an output file for appending, or stderr for "-". A file is
// private to the user and never blocks: see outfile.
func (t *Telemetry) open(path string, stderr io.Writer) (io.Writer, string, error) {
	if path == "-" {
		return stderr, "(stderr)", nil
	}
	f, err := outfile.Open(path)
	if err != nil {
		return nil, "", err
	}
	t.closers = append(t.closers, f)
	t.files = append(t.files, f)
	return f, path, nil
}

func (t *Telemetry) closeAll() error {
	var errs []error
	for _, c := range t.closers {
		errs = append(errs, c.Close())
	}
	t.closers = nil
	return errors.Join(errs...)
}

// temporalitySelector implements the OTLP metrics exporter's temporality
// preferences.
func temporalitySelector(pref config.Temporality) sdkmetric.TemporalitySelector {
	return func(k sdkmetric.InstrumentKind) metricdata.Temporality {
		switch pref {
		case config.TemporalityDelta:
			switch k {
			case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindObservableCounter, sdkmetric.InstrumentKindHistogram:
				return metricdata.DeltaTemporality
			}
		case config.TemporalityLowMemory:
			switch k {
			case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindHistogram:
				return metricdata.DeltaTemporality
			}
		}
		return metricdata.CumulativeTemporality
	}
}

// observedMetrics reports failed metric exports.
type observedMetrics struct {
	sdkmetric.Exporter
	onError func(error)
}

func (e observedMetrics) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	if err != nil {
		e.onError(err)
	}
	return err
}

// TracerProvider is where the mapper creates its spans.
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.api }

// attributeLimit is the SDK's form of config.Config's limit: 0 is none.
func attributeLimit(n int) int {
	if n <= 0 {
		return sdktrace.DefaultAttributeValueLengthLimit
	}
	return n
}

// MeterProvider is where pi-otel records its metrics.
func (t *Telemetry) MeterProvider() metric.MeterProvider { return t.mp }

// Stats returns the span counts so far.
func (t *Telemetry) Stats() Stats {
	s, _ := t.counters.snapshot()
	return s
}

// ForceFlush exports what is buffered now, bounded by ctx.
func (t *Telemetry) ForceFlush(ctx context.Context) error {
	errs := []error{t.tp.ForceFlush(ctx)}
	if t.lp != nil {
		errs = append(errs, t.lp.ForceFlush(ctx))
	}
	return errors.Join(append(errs, t.mp.ForceFlush(ctx))...)
}

// Handle implements otel.ErrorHandler. Errors the SDK reports this way are
// mostly export failures already reported, so one is shown only if nothing
// else has been said, and only once.
func (t *Telemetry) Handle(err error) {
	if err == nil || cancelled(err) {
		return
	}
	t.rep.mu.Lock()
	saidAny := len(t.rep.said) > 0
	t.rep.mu.Unlock()
	if !saidAny {
		t.rep.once("sdk", "telemetry error: "+err.Error())
	}
}

// Shutdown flushes and stops the pipeline, spending at most the configured
// flush timeout (less if ctx ends sooner). Spans not exported by then are
// counted as dropped. Export problems have already been reported on stderr;
// the error is for logs and tests. Calls after the first return its result.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.shutdownOnce.Do(func() { t.shutdownErr = t.shutdown(ctx) })
	return t.shutdownErr
}

func (t *Telemetry) shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.FlushTimeout)
	defer cancel()
	// An exporter blocked on a file nobody reads gives up with the flush,
	// releasing what it holds, so shutdown itself cannot hang.
	for _, f := range t.files {
		stop := context.AfterFunc(ctx, func() { f.SetDeadline(time.Now()) })
		defer stop()
	}
	var errs []error

	if t.traceWatch != nil && t.batcher != nil {
		// A collector found missing during the flush will not appear in
		// the seconds left: give up instead of sitting out the backoff.
		if t.traceWatch.beginShutdown(t.batcher.abort) {
			t.traceWatch.reconnect(ctx)
			t.batcher.kick()
		}
	}
	errs = append(errs, t.tp.Shutdown(ctx))
	if t.batcher != nil {
		// The provider skips its processors when ctx has already ended.
		errs = append(errs, t.batcher.Shutdown(ctx))
	}
	t.counters.freeze(t.batcher != nil)
	t.stopSpool(ctx)

	// Log records come from spans as they end, so they are flushed after
	// the traces and before the metrics.
	if t.lp != nil {
		lctx, lcancel := context.WithCancel(ctx)
		defer lcancel()
		if t.logWatch != nil && t.logWatch.beginShutdown(lcancel) {
			t.logWatch.reconnect(lctx)
		}
		errs = append(errs, t.lp.Shutdown(lctx))
		t.logCount.wait(ctx)
		t.logsDone.Store(true)
	}

	mctx, mcancel := context.WithCancel(ctx)
	defer mcancel()
	if t.metricWatch != nil && t.metricWatch.beginShutdown(mcancel) {
		t.metricWatch.reconnect(mctx)
	}
	// A failed last export was reported as it happened, with the fix;
	// the same failure again, as the SDK words it, would only be noise.
	if err := t.mp.Shutdown(mctx); err != nil && (t.metricWatch == nil || !t.metricWatch.hasFailed()) {
		errs = append(errs, err)
	}
	errs = append(errs, t.closeAll())
	return errors.Join(errs...)
}

// Summary is the one line pi-otel prints at exit, such as
// "pi-otel: 1 trace (4bf92f3577b34da6a3ce929d0e0e4736), 12 spans → otlp grpc localhost:4317".
// Failed and dropped spans are added when there are any.
func (t *Telemetry) Summary() string {
	s, first := t.counters.snapshot()
	var b strings.Builder
	b.WriteString("pi-otel: ")
	switch s.Traces {
	case 1:
		fmt.Fprintf(&b, "1 trace (%s)", first)
	default:
		fmt.Fprintf(&b, "%d traces", s.Traces)
	}
	fmt.Fprintf(&b, ", %s → %s", plural(s.Ended, "span"), t.traceDest)
	var problems []string
	if t.logCount != nil {
		fmt.Fprintf(&b, ", %s → %s", plural(t.logCount.exported.Load(), "log record"), t.logDest)
		if n := t.logCount.failed.Load(); n > 0 {
			problems = append(problems, plural(n, "log record")+" failed to export")
		}
		if n := t.logCount.dropped(); n > 0 && t.logsDone.Load() {
			problems = append(problems, plural(n, "log record")+" dropped")
		}
	}
	if s.Failed > 0 {
		problems = append(problems, fmt.Sprintf("%d failed to export", s.Failed))
	}
	if s.Dropped > 0 {
		problems = append(problems, plural(s.Dropped, "span")+" dropped")
	}
	if p := s.Pending(); p > 0 && t.batcher != nil {
		problems = append(problems, fmt.Sprintf("%d pending", p))
	}
	if s.Spooled > 0 {
		problems = append(problems, fmt.Sprintf("%d kept in %s for the next pi-otel to send", s.Spooled, t.spool.Dir()))
	}
	if t.spool != nil {
		sp := t.spool.Stats()
		if sp.Late > 0 {
			problems = append(problems, plural(sp.Late, "span")+" of earlier runs delivered")
		}
		if sp.Dropped > 0 {
			problems = append(problems, plural(sp.Dropped, "spooled span")+" dropped (spool bounds)")
		}
	}
	if len(problems) > 0 {
		b.WriteString("; " + strings.Join(problems, ", "))
	}
	return b.String()
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func hasKey(attrs []attribute.KeyValue, key attribute.Key) bool {
	for _, kv := range attrs {
		if kv.Key == key {
			return true
		}
	}
	return false
}

// newInstanceID is a random (version 4) UUID, as the convention suggests
// for service.instance.id.
func newInstanceID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
