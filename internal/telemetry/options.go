package telemetry

import (
	"context"
	"io"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/option"
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
	procs   []func(metric.MeterProvider) (sdktrace.SpanProcessor, error)
	// sampler narrows the pipeline's sampler (WithSampler).
	sampler func(sdktrace.Sampler) sdktrace.Sampler
	// rename rewrites the attributes of exported spans (WithExportedAttributes).
	rename func([]attribute.KeyValue) []attribute.KeyValue
	// schema is the exported spans' scope schema (WithExportedSchemaURL).
	schema string
	// logProcs are built only when logs are on (see WithLogProcessor).
	logProcs []func(log.LoggerProvider) (sdktrace.SpanProcessor, error)
	// backpressure, when set, makes a full queue wait instead of drop
	// while it is live (see WithBackpressure).
	backpressure context.Context
	// spoolRetry, when set, replaces spoolRetry (tests only).
	spoolRetry time.Duration
}

// WithBackpressure makes span export hold up the producer instead of
// dropping spans when the queue is full, while ctx is live: replay and
// watch have no live Pi to protect, so they must lose nothing. Once ctx
// is done (a signal), spans that find the queue full are held for the
// last flush, up to a queue's worth (the rest of the run being traced,
// which watch would otherwise record as delivered with spans missing),
// then dropped and counted, so nothing can keep pi-otel from exiting.
// run and rpc never use it: Pi comes first.
func WithBackpressure(ctx context.Context) Option {
	return option.Func[options](func(o *options) { o.backpressure = ctx })
}

// WithSpanProcessor adds a processor built on the pipeline's meter provider,
// such as the one that derives metrics from finished spans. It sees every
// span before export.
func WithSpanProcessor(build func(metric.MeterProvider) (sdktrace.SpanProcessor, error)) Option {
	return option.Func[options](func(o *options) { o.procs = append(o.procs, build) })
}

// WithSampler narrows the pipeline's sampler with narrow, which is given
// the one it would use: a consumer that reads only some spans (report
// reads roots) lets the SDK record nothing of the others.
func WithSampler(narrow func(sdktrace.Sampler) sdktrace.Sampler) Option {
	return option.Func[options](func(o *options) { o.sampler = narrow })
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

func (o options) consoleOut() io.Writer {
	if o.console != nil {
		return o.console
	}
	return o.stderr
}

// WithResource merges r over the resource built from the configuration:
// facts only the command learns, such as the version of the Pi it runs.
func WithResource(r *resource.Resource) Option {
	return option.Func[options](func(o *options) { o.res = r })
}
