package telemetry

import (
	"context"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/internal/outfile"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/internal/telemetry/consoletree"
	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
)

// Setup builds the pipeline. It does not connect to anything: OTLP
// exporters connect on their first export, so a missing collector shows up
// later, once, on stderr, rather than here.
func Setup(ctx context.Context, cfg Config, opts ...Option) (_ *Pipeline, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := option.Apply(options{stderr: os.Stderr, retry: defaultRetry}, opts)
	cfg = withDefaults(cfg)
	t := &Pipeline{cfg: cfg, rep: newReporter(o.stderr, cfg.Quiet), counters: newCounters()}
	defer func() {
		if err != nil {
			// Done already: Setup failed, so nothing is waited for.
			stopped, cancel := context.WithCancel(context.Background())
			cancel()
			if t.queue != nil {
				_ = t.queue.Shutdown(stopped)
			}
			if t.lp != nil {
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
	if o.rename != nil || o.schema != "" {
		proc = renaming{SpanProcessor: proc, f: o.rename, schema: o.schema}
	}
	procs := []sdktrace.SpanProcessor{proc}
	sampler := sdktrace.ParentBased(sdktrace.AlwaysSample())
	if o.sampler != nil {
		sampler = o.sampler(sampler)
	}
	tpOpts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler),
		// Explicit limits: the SDK's defaults, but the attribute value
		// length from Config (OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT and
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
	}
	// Spans named by a key get ids derived from it; the rest, random ones.
	tpOpts = append(tpOpts, sdktrace.WithIDGenerator(spanid.NewGenerator(nil)))
	for _, build := range o.procs {
		p, err := build(t.mp)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	if t.lp != nil {
		for _, build := range o.logProcs {
			p, err := build(t.lp)
			if err != nil {
				return nil, err
			}
			procs = append(procs, p)
		}
	}
	tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(scrubbing{procs: procs, n: newNameScrubber(cfg.Redact)}))
	t.tp = sdktrace.NewTracerProvider(tpOpts...)
	t.api = t.tp
	if n := cfg.AttributeValueLengthLimit; n > 0 {
		t.api = limitedProvider{tp: t.tp, limit: n}
	}

	return t, nil
}

func (t *Pipeline) setupTraces(ctx context.Context, cfg Config, o options) (sdktrace.SpanProcessor, error) {
	var exp sdktrace.SpanExporter
	switch cfg.Traces.Exporter {
	case ExporterNone:
		t.traceDest = "none (not exported)"
		return countOnly{t.counters}, nil
	case ExporterConsole:
		t.traceDest = "console (stderr)"
		out := o.consoleOut()
		if out != o.stderr {
			t.traceDest = "console (stdout)"
		}
		color := consoletree.ColorFor(out, cfg.NoColor)
		exp = consoletree.New(out, consoletree.WithColor(color))
	case ExporterFile:
		w, name, err := t.open(cfg.Traces.File, o.stderr)
		if err != nil {
			return nil, err
		}
		t.traceDest = "file " + name
		exp = otlpfile.NewTraceExporter(w)
	case ExporterOTLP:
		ot := cfg.Traces.OTLP
		t.traceDest = otlpDest(ot)
		t.traceWatch = t.newWatch("traces", ot, noCollectorHint(ot, "--traces-exporter console"))
		var err error
		var client otlptrace.Client
		if exp, client, err = newOTLPTraceExporter(ctx, ot, o.retry, t.traceWatch); err != nil {
			return nil, err
		}
		t.startSpool(cfg.Spool, client, o.spoolRetry)
	default:
		return nil, fmt.Errorf("unknown exporter %q", cfg.Traces.Exporter)
	}
	var bopts []durableOption
	if t.traceWatch != nil {
		bopts = append(bopts, retainWhile(t.traceWatch.isDown, retainPause), refusedWhen(refused))
	}
	if t.spool != nil {
		bopts = append(bopts, spoolTo(t.keep, t.spoolDelivered))
	}
	onError := t.exportErrors("traces", "traces", t.traceDest, t.traceWatch)
	t.queue = newSpanQueue(exp, cfg.Batch, t.counters, onError, o.backpressure, bopts...)
	return t.queue, nil
}

func (t *Pipeline) setupMetrics(ctx context.Context, cfg Config, o options) (sdkmetric.Reader, error) {
	temporality := temporalitySelector(cfg.Temporality)
	var exp sdkmetric.Exporter
	var dest string
	var w *watch
	timeout := DefaultOTLPTimeout
	switch cfg.Metrics.Exporter {
	case ExporterNone:
		return nil, nil
	case ExporterConsole:
		dest = "console"
		exp = &consoleMetrics{w: o.consoleOut(), Selectors: otlpfile.Selectors{TemporalitySelector: temporality}}
	case ExporterFile:
		out, name, err := t.open(cfg.Metrics.File, o.stderr)
		if err != nil {
			return nil, err
		}
		dest = "file " + name
		exp = otlpfile.NewMetricExporter(out, otlpfile.WithTemporalitySelector(temporality))
	case ExporterOTLP:
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
	t.metricDest = dest
	onError := t.exportErrors("metrics", "metrics", dest, w)
	return sdkmetric.NewPeriodicReader(observedMetrics{Exporter: exp, onError: onError},
		sdkmetric.WithInterval(cfg.MetricsInterval),
		sdkmetric.WithTimeout(timeout),
	), nil
}

func otlpDest(o OTLP) string { return fmt.Sprintf("otlp %s %s", o.Protocol, o.Target()) }

// newWatch watches a signal's OTLP exporter; hint is the way out when
// nothing answers.
func (t *Pipeline) newWatch(signal string, o OTLP, hint string) *watch {
	return &watch{rep: t.rep, dest: destination{signal: signal, host: hostOf(o.Endpoint), target: o.Target(), hint: hint}}
}

// exportErrors reports a signal's failed exports of what (its data, as the
// message names it): through w when it goes to OTLP, which explains them,
// else once per destination.
func (t *Pipeline) exportErrors(signal, what, dest string, w *watch) func(error) {
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
func noCollectorHint(o OTLP, instead string) string {
	if o.EndpointFrom == "" {
		return "that is the default endpoint; set OTEL_EXPORTER_OTLP_ENDPOINT or --endpoint, or use " + instead
	}
	return fmt.Sprintf("the endpoint comes from %s: start a collector there or fix it, or use %s", o.EndpointFrom, instead)
}

// open opens an output file for appending, or stderr for "-". A file is
// private to the user and never blocks: see outfile. A last line that a
// killed process left cut short is ended, and said once.
func (t *Pipeline) open(path string, stderr io.Writer) (io.Writer, string, error) {
	if path == "-" {
		return stderr, "(stderr)", nil
	}
	f, err := outfile.Open(path, outfile.OnTornLine(func() {
		t.rep.once("torn "+path, fmt.Sprintf("%s ended in a line cut short (its writer was killed mid-line): "+
			"ended it there, so that one line is not JSON and the new lines start on their own", path))
	}))
	if err != nil {
		return nil, "", err
	}
	t.files = append(t.files, f)
	return f, path, nil
}

// temporalitySelector implements the OTLP metrics exporter's temporality
// preferences.
func temporalitySelector(pref Temporality) sdkmetric.TemporalitySelector {
	return func(k sdkmetric.InstrumentKind) metricdata.Temporality {
		switch pref {
		case TemporalityDelta:
			switch k {
			case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindObservableCounter, sdkmetric.InstrumentKindHistogram:
				return metricdata.DeltaTemporality
			}
		case TemporalityLowMemory:
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

// attributeLimit is the SDKs' form of Config.AttributeValueLengthLimit, for
// spans and log records alike: 0 is none, which both SDKs spell -1.
func attributeLimit(n int) int {
	if n <= 0 {
		return sdktrace.DefaultAttributeValueLengthLimit
	}
	return n
}
