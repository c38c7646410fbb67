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
// errors through otel.Handle; an ErrorRoute installed once as the global
// error handler (in main) and routed to the Pipeline brings them into the
// same once-only stderr line.
package telemetry

import (
	"context"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/metric"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/outfile"
	"github.com/pi-otel/pi-otel/internal/telemetry/spool"
)

// Pipeline is a running telemetry pipeline: the providers, their exporters
// and what counts their output.
type Pipeline struct {
	cfg Config
	rep *reporter

	tp  *sdktrace.TracerProvider
	api trace.TracerProvider // tp, or tp cutting span event attributes too
	mp  *sdkmetric.MeterProvider
	lp  *sdklog.LoggerProvider // nil when logs are off

	counters    *counters
	queue       *spanQueue // nil when spans are not exported
	traceWatch  *watch     // nil unless traces go to OTLP
	metricWatch *watch     // nil unless metrics go to OTLP
	logWatch    *watch     // nil unless logs go to OTLP
	traceDest   string
	logDest     string
	metricDest  string            // "" when metrics are off
	logCount    *countedLogs      // log records exported and failed; nil when logs are off
	logsDone    atomic.Bool       // the logs are shut down: what was not exported is lost
	files       []*outfile.Writer // output files, bounded by the flush at shutdown and closed after it

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

// TracerProvider is where the mapper creates its spans.
func (t *Pipeline) TracerProvider() trace.TracerProvider { return t.api }

// MeterProvider is where pi-otel records its metrics.
func (t *Pipeline) MeterProvider() metric.MeterProvider { return t.mp }

// Stats returns the span counts so far.
func (t *Pipeline) Stats() Stats {
	s, _ := t.counters.snapshot()
	return s
}

// Handle implements otel.ErrorHandler. Errors the SDK reports this way are
// mostly export failures already reported, so one is shown only if nothing
// else has been said, and only once.
func (t *Pipeline) Handle(err error) {
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
