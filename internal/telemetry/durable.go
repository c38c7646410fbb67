package telemetry

import (
	"context"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/option"
)

// durable is the exporter the SDK's BatchSpanProcessor feeds. The SDK
// leaves retry to the exporter, as the Collector's exporterhelper does;
// this one keeps a batch while the collector is down, spools what it
// cannot deliver, and counts what became of every span it was handed.
// Having counted and reported the outcome, it returns nil: the processor
// has nothing left to do with an error.
type durable struct {
	exp     sdktrace.SpanExporter
	timeout time.Duration // of one attempt
	c       *counters
	onError func(error)
	// settled is told how many spans each batch held once their outcome
	// is counted, so the queue in front knows what is still on its way.
	settled func(n int)
	durableConfig

	// ctx is the parent of every attempt; abort cancels it so that the
	// attempt in flight and later ones give up at once.
	ctx   context.Context
	abort context.CancelFunc
	// stopping ends retention and its pauses: Shutdown has begun.
	stopping chan struct{}
	stopOnce sync.Once
	// drained is closed when the processor, done with its last batch,
	// shuts the exporter down.
	drained   chan struct{}
	drainOnce sync.Once

	// inflight cancels the attempt in progress; kicked marks that it was
	// cancelled to be tried again at once (see kick).
	mu       sync.Mutex
	inflight context.CancelFunc
	kicked   bool
}

// durableConfig is what the durableOptions tune; each is off when unset.
type durableConfig struct {
	// retain says whether a failed batch is kept and tried again (see
	// retainWhile).
	retain      func(error) bool
	retainPause time.Duration
	// keep may keep a batch that failed to export for a later process; it
	// reports whether it did.
	keep func(batch []sdktrace.ReadOnlySpan, err error) bool
	// delivered is told of each batch the exporter took: the collector is
	// back, so the spool can go.
	delivered func()
	// refused says the collector refused a batch outright.
	refused func(error) bool
}

// durableOption tunes a durable exporter.
type durableOption = option.Option[durableConfig]

// spoolTo hands batches that could not be exported to keep, and calls
// delivered after each batch the exporter took.
func spoolTo(keep func([]sdktrace.ReadOnlySpan, error) bool, delivered func()) durableOption {
	return option.Func[durableConfig](func(c *durableConfig) { c.keep, c.delivered = keep, delivered })
}

// retainWhile keeps a batch whose export failed while down() reports the
// collector unreachable, and tries it again after pause, until it goes
// through or Shutdown begins. The exporter's own retries end with its
// timeout (10s by default), far sooner than a collector takes to restart;
// meanwhile new spans wait in the queue, and only those that do not fit
// are dropped.
func retainWhile(down func() bool, pause time.Duration) durableOption {
	return option.Func[durableConfig](func(c *durableConfig) {
		c.retain = func(err error) bool { return !cancelled(err) && down() }
		c.retainPause = pause
	})
}

// refusedWhen counts a batch whose export failed with an error for which
// refused reports true as Refused: it is neither retained nor kept.
func refusedWhen(refused func(error) bool) durableOption {
	return option.Func[durableConfig](func(c *durableConfig) { c.refused = refused })
}

func newDurable(exp sdktrace.SpanExporter, timeout time.Duration, c *counters, onError func(error), opts ...durableOption) *durable {
	ctx, cancel := context.WithCancel(context.Background())
	return &durable{
		exp: exp, timeout: timeout, c: c, onError: onError, settled: func(int) {},
		durableConfig: option.Apply(durableConfig{}, opts),
		ctx:           ctx, abort: cancel,
		stopping: make(chan struct{}), drained: make(chan struct{}),
	}
}

// ExportSpans delivers batch, keeps it, or counts it lost. The caller's
// ctx does not bound it: a flush that gives up waiting leaves the batch
// to go on as it would have; Shutdown's abort ends it.
func (d *durable) ExportSpans(_ context.Context, batch []sdktrace.ReadOnlySpan) error {
	n := int64(len(batch))
	defer d.settled(len(batch))
	retriedKick := false
	for {
		ctx, cancel := context.WithTimeout(d.ctx, d.timeout)
		d.mu.Lock()
		d.inflight, d.kicked = cancel, false
		d.mu.Unlock()

		err := d.exp.ExportSpans(ctx, batch)

		d.mu.Lock()
		kicked := d.kicked
		d.inflight = nil
		d.mu.Unlock()
		cancel()

		switch {
		case err == nil:
			d.c.add(Stats{Exported: n})
			if d.delivered != nil {
				d.delivered()
			}
		case kicked && !retriedKick && d.ctx.Err() == nil:
			retriedKick = true
			continue
		case d.refused != nil && d.refused(err):
			d.c.add(Stats{Refused: n})
			d.report(err)
		case d.retain != nil && !d.isStopping() && d.ctx.Err() == nil && d.retain(err):
			d.report(err)
			d.pause()
			continue
		case d.keep != nil && d.keep(batch, err):
			d.c.add(Stats{Spooled: n})
		default:
			d.c.add(Stats{Failed: n})
			d.report(err)
		}
		return nil
	}
}

func (d *durable) report(err error) {
	if d.onError != nil {
		d.onError(err)
	}
}

// Shutdown marks the processor done with its last batch; the pipeline
// shuts the wrapped exporter down once what waited for room is out too.
func (d *durable) Shutdown(context.Context) error {
	d.drainOnce.Do(func() { close(d.drained) })
	return nil
}

// stop ends retention: the batch in a pause is tried once more at once,
// and a failure from now on is kept or counted, not retained.
func (d *durable) stop() { d.stopOnce.Do(func() { close(d.stopping) }) }

func (d *durable) isStopping() bool {
	select {
	case <-d.stopping:
		return true
	default:
		return false
	}
}

// kick makes the attempt in flight, likely asleep between two of the
// exporter's own retries, try again now. Shutdown uses it so that the
// last chance to reach a collector is taken at once rather than after
// the backoff.
func (d *durable) kick() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inflight != nil {
		d.kicked = true
		d.inflight()
	}
}

// pause waits before a retained batch is tried again; Shutdown cuts it
// short, so the last attempt comes at once.
func (d *durable) pause() {
	t := time.NewTimer(d.retainPause)
	defer t.Stop()
	select {
	case <-t.C:
	case <-d.stopping:
	case <-d.ctx.Done():
	}
}
