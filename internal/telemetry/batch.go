package telemetry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Stats counts spans on their way out. While running, Ended minus the
// others is what is still queued or being exported; after Shutdown every
// ended span is Exported, Failed, Dropped, Spooled or Refused.
type Stats struct {
	// Traces is the number of traces among ended spans, each counted when
	// its root ends (a span continuing a caller's trace counts that trace
	// once).
	Traces int
	// Ended counts sampled spans that ended.
	Ended int64
	// Exported counts spans the exporter accepted.
	Exported int64
	// Failed counts spans handed to the exporter that it could not export.
	Failed int64
	// Dropped counts spans never handed to the exporter: the queue was
	// full, or they were still queued when the flush timeout ran out.
	Dropped int64
	// Spooled counts spans an export could not deliver that were kept on
	// disk for the next pi-otel process (see package spool).
	Spooled int64
	// Refused counts spans the collector refused outright (an invalid
	// batch): sent again, they would be refused again, so they are lost
	// for good, neither kept nor traced again.
	Refused int64
}

// Pending is the number of spans neither exported, failed nor dropped yet.
func (s Stats) Pending() int64 {
	return s.Ended - s.Exported - s.Failed - s.Dropped - s.Spooled - s.Refused
}

// counters is shared by the span processor and the exporter side.
type counters struct {
	mu sync.Mutex
	s  Stats
	// remote holds the ids of the traces that local roots continue from a
	// caller (TRACEPARENT); there are few. Every other trace is counted by
	// its root, so an RPC session of many thousand runs keeps no ids.
	remote     map[trace.TraceID]struct{}
	firstTrace trace.TraceID
	frozen     bool
}

func newCounters() *counters { return &counters{remote: map[trace.TraceID]struct{}{}} }

func (c *counters) ended(s sdktrace.ReadOnlySpan) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return
	}
	tid := s.SpanContext().TraceID()
	if c.s.Ended == 0 {
		c.firstTrace = tid
	}
	c.s.Ended++
	switch p := s.Parent(); {
	case !p.IsValid():
		c.s.Traces++ // a new trace
	case p.IsRemote():
		if _, ok := c.remote[tid]; !ok {
			c.remote[tid] = struct{}{}
			c.s.Traces++
		}
	}
}

func (c *counters) add(exported, failed, dropped int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return
	}
	c.s.Exported += exported
	c.s.Failed += failed
	c.s.Dropped += dropped
}

// freeze settles the books at shutdown: whatever is not exported or failed
// by now is lost, so it counts as dropped, and later results are ignored.
// exported reports whether spans were exported at all; with the none
// exporter nothing is ever lost.
func (c *counters) freeze(exported bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return
	}
	if exported {
		c.s.Dropped = c.s.Ended - c.s.Exported - c.s.Failed - c.s.Spooled - c.s.Refused
	}
	c.frozen = true
}

func (c *counters) spooled(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen {
		c.s.Spooled += n
	}
}

func (c *counters) refused(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.frozen {
		c.s.Refused += n
	}
}

func (c *counters) snapshot() (Stats, trace.TraceID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s, c.firstTrace
}

// countOnly is the span processor of the none exporter: spans are created
// and counted, and go nowhere.
type countOnly struct{ c *counters }

func (p countOnly) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (p countOnly) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		p.c.ended(s)
	}
}
func (p countOnly) Shutdown(context.Context) error   { return nil }
func (p countOnly) ForceFlush(context.Context) error { return nil }

// batcher is a batch span processor that counts what it drops. The SDK's
// BatchSpanProcessor drops silently when its queue is full; pi-otel must say
// how many spans were lost, so it keeps its own books. OnEnd never blocks:
// a full queue drops the span.
type batcher struct {
	exp     sdktrace.SpanExporter
	cfg     Batch
	c       *counters
	onError func(error)

	queue  chan sdktrace.ReadOnlySpan
	flushc chan chan struct{}
	stopc  chan struct{}
	done   chan struct{}

	// ctx is the parent of every export; abort cancels it so in-flight and
	// later exports give up at once.
	ctx   context.Context
	abort context.CancelFunc

	// inflight cancels the export in progress; kicked marks that it was
	// cancelled to be tried again at once (see kick).
	mu       sync.Mutex
	inflight context.CancelFunc
	kicked   bool

	// held are spans that ended, waiting for room, as block ended (a
	// signal): the run being traced then is exported or spooled whole with
	// the rest at the last flush, not cut short.
	heldMu sync.Mutex
	held   []sdktrace.ReadOnlySpan

	stopped  atomic.Bool
	stopOnce sync.Once
	stopErr  error

	batcherConfig
}

// batcherConfig is what the batcherOptions tune; each is off when unset.
type batcherConfig struct {
	// retain says whether a failed batch is kept and tried again (see
	// retainWhile).
	retain      func(error) bool
	retainPause time.Duration

	// block is live while a full queue makes OnEnd wait.
	block context.Context
	// keep may keep a batch that failed to export for a later process; it
	// reports whether it did.
	keep func(batch []sdktrace.ReadOnlySpan, err error) bool
	// delivered is told of each batch the exporter took: the collector is
	// back, so the spool can go.
	delivered func()
	// refused says the collector refused a batch outright.
	refused func(error) bool
}

// batcherOption tunes a batcher.
type batcherOption = option.Option[batcherConfig]

// keepFailed hands batches that could not be exported to keep.
func keepFailed(keep func([]sdktrace.ReadOnlySpan, error) bool) batcherOption {
	return option.Func[batcherConfig](func(c *batcherConfig) { c.keep = keep })
}

// onDelivered calls f after each batch the exporter took.
func onDelivered(f func()) batcherOption {
	return option.Func[batcherConfig](func(c *batcherConfig) { c.delivered = f })
}

// retainWhile keeps a batch whose export failed while down() reports the
// collector unreachable, and tries it again after pause, until it goes
// through or Shutdown begins. The exporter's own retries end with its
// timeout (10s by default), far sooner than a collector takes to restart;
// meanwhile new spans wait in the queue, and only those that do not fit
// are dropped.
func retainWhile(down func() bool, pause time.Duration) batcherOption {
	return option.Func[batcherConfig](func(c *batcherConfig) {
		c.retain = func(err error) bool { return !cancelled(err) && down() }
		c.retainPause = pause
	})
}

// refusedWhen counts a batch whose export failed with an error for which
// refused reports true as Refused: it is neither retained nor kept.
func refusedWhen(refused func(error) bool) batcherOption {
	return option.Func[batcherConfig](func(c *batcherConfig) { c.refused = refused })
}

// blockWhile makes OnEnd wait for room in a full queue while ctx is live.
func blockWhile(ctx context.Context) batcherOption {
	return option.Func[batcherConfig](func(c *batcherConfig) { c.block = ctx })
}

func newBatcher(exp sdktrace.SpanExporter, cfg Batch, c *counters, onError func(error), opts ...batcherOption) *batcher {
	ctx, cancel := context.WithCancel(context.Background())
	b := &batcher{
		exp:     exp,
		cfg:     cfg,
		c:       c,
		onError: onError,
		queue:   make(chan sdktrace.ReadOnlySpan, cfg.MaxQueueSize),
		flushc:  make(chan chan struct{}),
		stopc:   make(chan struct{}),
		done:    make(chan struct{}),
		ctx:     ctx,
		abort:   cancel,

		batcherConfig: option.Apply(batcherConfig{}, opts),
	}
	go b.run()
	return b
}

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.c.ended(s)
	if b.stopped.Load() {
		b.c.add(0, 0, 1)
		return
	}
	select {
	case b.queue <- s:
		return
	default:
	}
	if b.block != nil {
		select {
		case b.queue <- s:
			return
		case <-b.block.Done():
			if b.hold(s) {
				return
			}
		case <-b.stopc:
		}
	}
	b.c.add(0, 0, 1)
}

// hold keeps s for the next drain, up to a queue's worth, and reports
// whether it did.
func (b *batcher) hold(s sdktrace.ReadOnlySpan) bool {
	b.heldMu.Lock()
	defer b.heldMu.Unlock()
	if len(b.held) >= b.cfg.MaxQueueSize || b.stopped.Load() {
		return false
	}
	b.held = append(b.held, s)
	return true
}

// takeHeld returns the held spans and forgets them.
func (b *batcher) takeHeld() []sdktrace.ReadOnlySpan {
	b.heldMu.Lock()
	defer b.heldMu.Unlock()
	h := b.held
	b.held = nil
	return h
}

// ForceFlush exports everything queued so far.
func (b *batcher) ForceFlush(ctx context.Context) error {
	if b.stopped.Load() {
		return nil
	}
	ack := make(chan struct{})
	select {
	case b.flushc <- ack:
	case <-b.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued, bounded by ctx, then shuts the exporter
// down. When ctx ends first, the export in flight is cancelled.
func (b *batcher) Shutdown(ctx context.Context) error {
	b.stopOnce.Do(func() {
		b.stopped.Store(true)
		close(b.stopc)
		var err error
		select {
		case <-b.done:
		case <-ctx.Done():
			b.abort()
			err = ctx.Err()
			// The cancelled export ends at once and its batch is spooled
			// or counted as failed: wait for that, or the books would
			// count it dropped while the spool sends it later too.
			t := time.NewTimer(abortWait)
			select {
			case <-b.done:
			case <-t.C:
			}
			t.Stop()
		}
		b.stopErr = errors.Join(err, b.exp.Shutdown(ctx))
	})
	return b.stopErr
}

// abortWait bounds the wait for an export cancelled at shutdown.
const abortWait = 2 * time.Second

func (b *batcher) run() {
	defer close(b.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var batch []sdktrace.ReadOnlySpan
	flush := func() {
		if len(batch) > 0 {
			b.export(batch)
			batch = nil
		}
	}
	add := func(s sdktrace.ReadOnlySpan) {
		if len(batch) == 0 {
			timer.Reset(b.cfg.ScheduleDelay)
		}
		batch = append(batch, s)
		if len(batch) >= b.cfg.MaxExportBatchSize {
			flush()
		}
	}
	// drain takes only what is queued now, so producers that keep going
	// cannot hold a flush open.
	drain := func() {
		for n := len(b.queue); n > 0; n-- {
			add(<-b.queue)
		}
		for _, s := range b.takeHeld() {
			add(s)
		}
		flush()
	}
	for {
		select {
		case s := <-b.queue:
			add(s)
		case <-timer.C:
			flush()
		case ack := <-b.flushc:
			drain()
			close(ack)
		case <-b.stopc:
			drain()
			return
		}
	}
}

// kick makes the export in flight, likely asleep between two retries,
// try again now. Shutdown uses it so that the last chance to reach a
// collector is taken at once rather than after the backoff.
func (b *batcher) kick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inflight != nil {
		b.kicked = true
		b.inflight()
	}
}

func (b *batcher) export(batch []sdktrace.ReadOnlySpan) {
	n := int64(len(batch))
	retriedKick := false
	for {
		ctx, cancel := context.WithTimeout(b.ctx, b.cfg.ExportTimeout)
		b.mu.Lock()
		b.inflight, b.kicked = cancel, false
		b.mu.Unlock()

		err := b.exp.ExportSpans(ctx, batch)

		b.mu.Lock()
		kicked := b.kicked
		b.inflight = nil
		b.mu.Unlock()
		cancel()

		switch {
		case err == nil:
			b.c.add(n, 0, 0)
			if b.delivered != nil {
				b.delivered()
			}
		case kicked && !retriedKick && b.ctx.Err() == nil:
			retriedKick = true
			continue
		case b.refused != nil && b.refused(err):
			b.c.refused(n)
			if b.onError != nil {
				b.onError(err)
			}
		case b.retain != nil && !b.stopped.Load() && b.ctx.Err() == nil && b.retain(err):
			if b.onError != nil {
				b.onError(err)
			}
			b.pause()
			continue
		case b.keep != nil && b.keep(batch, err):
			b.c.spooled(n)
		default:
			b.c.add(0, n, 0)
			if b.onError != nil {
				b.onError(err)
			}
		}
		return
	}
}

// pause waits before a retained batch is tried again; Shutdown cuts it
// short, so the last attempt comes at once.
func (b *batcher) pause() {
	t := time.NewTimer(b.retainPause)
	defer t.Stop()
	select {
	case <-t.C:
	case <-b.stopc:
	case <-b.ctx.Done():
	}
}
