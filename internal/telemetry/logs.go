package telemetry

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
)

// Log record batching. The SDK's defaults, given explicitly so that the
// SDK does not read OTEL_BLRP_* on its own, beside config's one parse path.
const (
	logQueueSize     = 2048
	logBatchSize     = 512
	logExportEvery   = time.Second
	logExportTimeout = 30 * time.Second
)

// WithLogProcessor adds a span processor that turns finished spans into
// log records on the pipeline's logger provider. It is built only when a
// logs exporter is configured: with logs off it costs nothing.
func WithLogProcessor(build func(log.LoggerProvider) (sdktrace.SpanProcessor, error)) Option {
	return option.Func[options](func(o *options) { o.logProcs = append(o.logProcs, build) })
}

// setupLogs builds the logger provider, or nothing when logs are off.
func (t *Pipeline) setupLogs(ctx context.Context, cfg Config, o options, res *resource.Resource) error {
	var exp sdklog.Exporter
	var w *watch
	switch cfg.Logs.Exporter {
	case ExporterNone, "":
		return nil
	case ExporterConsole:
		t.logDest = "console (stderr)"
		exp = &consoleLogs{w: o.stderr}
	case ExporterFile:
		out, name, err := t.open(cfg.Logs.File, o.stderr)
		if err != nil {
			return err
		}
		t.logDest = "file " + name
		exp = otlpfile.NewLogExporter(out)
	case ExporterOTLP:
		ol := cfg.Logs.OTLP
		t.logDest = otlpDest(ol)
		w = t.newWatch("logs", ol, "set OTEL_EXPORTER_OTLP_LOGS_ENDPOINT or use --logs-exporter none")
		t.logWatch = w
		var err error
		if exp, err = newOTLPLogExporter(ctx, ol, o.retry, w); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown exporter %q", cfg.Logs.Exporter)
	}
	onError := t.exportErrors("logs", "log records", t.logDest, w)
	counted := &countedLogs{Exporter: exp, onError: onError, busy: make(chan struct{}, 1), room: make(chan struct{}, 1)}
	t.logCount = counted
	lopts := []sdklog.LoggerProviderOption{
		sdklog.WithResource(res),
		sdklog.WithProcessor(emitCounter{sdklog.NewBatchProcessor(counted,
			sdklog.WithMaxQueueSize(logQueueSize),
			sdklog.WithExportMaxBatchSize(logBatchSize),
			sdklog.WithExportInterval(logExportEvery),
			sdklog.WithExportTimeout(logExportTimeout)), counted, o.backpressure}),
	}
	// Explicit limits, as for spans: the SDK would otherwise read
	// OTEL_LOGRECORD_ATTRIBUTE_* on its own, beside config's one parse path.
	// A record has its span's attributes, so it gets the span's count limit.
	lopts = append(lopts, sdklog.WithAttributeValueLengthLimit(attributeLimit(cfg.AttributeValueLengthLimit)),
		sdklog.WithAttributeCountLimit(sdktrace.DefaultAttributeCountLimit))
	t.lp = sdklog.NewLoggerProvider(lopts...)
	return nil
}

// countedLogs counts the records exported and failed, for the summary
// line, and reports failures.
type countedLogs struct {
	sdklog.Exporter
	onError func(error)
	// emitted, exported and failed records: after Shutdown, the rest were
	// dropped (a full queue, or the flush timeout).
	emitted, exported, failed atomic.Int64
	// busy is held by the export in flight: the batch processor's Shutdown
	// returns when its context ends, before that export has.
	busy chan struct{}
	// room is signalled after each export, for producers held up by
	// backpressure.
	room chan struct{}
}

// wait waits, within ctx, for the export in flight to be counted.
func (e *countedLogs) wait(ctx context.Context) {
	select {
	case e.busy <- struct{}{}:
		<-e.busy
	case <-ctx.Done():
	}
}

func (e *countedLogs) Export(ctx context.Context, records []sdklog.Record) error {
	e.busy <- struct{}{} // the SDK never exports concurrently: this never waits long
	defer func() { <-e.busy }()
	defer func() {
		select {
		case e.room <- struct{}{}:
		default:
		}
	}()
	err := e.Exporter.Export(ctx, records)
	if err != nil {
		e.failed.Add(int64(len(records)))
		e.onError(err)
		return err
	}
	e.exported.Add(int64(len(records)))
	return nil
}

// emitCounter counts the records handed to the batch processor. While
// block is live (WithBackpressure), it holds the producer up before the
// SDK's queue is full, since that queue drops what does not fit.
type emitCounter struct {
	*sdklog.BatchProcessor
	c     *countedLogs
	block context.Context
}

// logsInFlight is how many records may wait under backpressure: the
// queue less one batch, so the SDK never has to drop.
const logsInFlight = logQueueSize - logBatchSize

func (p emitCounter) OnEmit(ctx context.Context, r *sdklog.Record) error {
	if p.block != nil {
		for p.block.Err() == nil && p.c.emitted.Load()-p.c.exported.Load()-p.c.failed.Load() >= logsInFlight {
			t := time.NewTimer(10 * time.Millisecond) // a signal sent before we waited is not lost for long
			select {
			case <-p.c.room:
			case <-p.block.Done():
			case <-t.C:
			}
			t.Stop()
		}
	}
	p.c.emitted.Add(1)
	return p.BatchProcessor.OnEmit(ctx, r)
}

// LogStats counts log records: emitted, exported and failed. After
// ForceFlush, the rest were dropped.
type LogStats struct {
	Emitted, Exported, Failed int64
}

// LogStats returns the log record counts; all zero when logs are off.
func (t *Pipeline) LogStats() LogStats {
	if t.logCount == nil {
		return LogStats{}
	}
	c := t.logCount
	return LogStats{Emitted: c.emitted.Load(), Exported: c.exported.Load(), Failed: c.failed.Load()}
}

// dropped is how many records were emitted but neither exported nor
// failed; only final after Shutdown.
func (e *countedLogs) dropped() int64 {
	return e.emitted.Load() - e.exported.Load() - e.failed.Load()
}

func newOTLPLogExporter(ctx context.Context, o OTLP, r Retry, w *watch) (sdklog.Exporter, error) {
	s, err := newExportSettings(o, r, w)
	if err != nil {
		return nil, err
	}
	if s.http {
		return otlploghttp.New(ctx, logHTTP.options(s)...)
	}
	return otlploggrpc.New(ctx, logGRPC.options(s)...)
}

// consoleLogs writes one line per record on stderr:
//
//	pi-otel log 12:00:01.234 INFO pi.tool.result trace=4bf9… span=00f0… gen_ai.tool.name=bash …
type consoleLogs struct {
	mu sync.Mutex
	w  io.Writer
}

func (e *consoleLogs) Export(ctx context.Context, records []sdklog.Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var b strings.Builder
	for i := range records {
		r := &records[i]
		fmt.Fprintf(&b, "pi-otel log %s %s %s trace=%s span=%s", r.Timestamp().UTC().Format("15:04:05.000"),
			r.Severity(), r.EventName(), r.TraceID(), r.SpanID())
		r.WalkAttributes(func(kv attribute.KeyValue) bool {
			fmt.Fprintf(&b, " %s=%s", kv.Key, oneLine(kv.Value.String()))
			return true
		})
		b.WriteByte('\n')
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := io.WriteString(e.w, b.String())
	return err
}

func (e *consoleLogs) ForceFlush(ctx context.Context) error { return ctx.Err() }
func (e *consoleLogs) Shutdown(context.Context) error       { return nil }

// oneLine keeps a record on one line of the console, and each value one
// word: captured content may span many lines, an error summary has spaces.
func oneLine(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n\r\"") {
		return s
	}
	return strconv.Quote(s)
}
