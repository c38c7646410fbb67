package telemetry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// spanQueue is the exporting span processor: the SDK's BatchSpanProcessor
// feeding a durable exporter. The SDK's processor drops silently when its
// queue is full, and pi-otel must say how many spans were lost, so a span
// goes on only while fewer than a queue and a batch's worth are on their
// way (handed on, their outcome not yet counted); past that it is dropped
// and counted here. Under backpressure (replay, watch) a span waits for
// room instead, and after a signal it is held for the last flush.
type spanQueue struct {
	bsp sdktrace.SpanProcessor
	exp *durable
	c   *counters

	// slots holds a token for each span on its way.
	slots chan struct{}
	// block is live while a full queue makes OnEnd wait; nil: never.
	block context.Context

	stopped atomic.Bool
	stopc   chan struct{}
	// held are spans that ended, waiting for room, as block ended (a
	// signal): the run being traced then is exported or spooled whole
	// with the rest at the last flush, not cut short.
	heldMu sync.Mutex
	held   []sdktrace.ReadOnlySpan

	stopOnce sync.Once
	stopErr  error
}

func newSpanQueue(exp sdktrace.SpanExporter, cfg Batch, c *counters, onError func(error), block context.Context, opts ...durableOption) *spanQueue {
	// One batch is exported while the queue fills behind it.
	room := cfg.MaxQueueSize + cfg.MaxExportBatchSize
	q := &spanQueue{
		exp: newDurable(exp, cfg.ExportTimeout, c, onError, opts...), c: c,
		slots: make(chan struct{}, room), block: block, stopc: make(chan struct{}),
	}
	q.exp.settled = q.release
	q.bsp = sdktrace.NewBatchSpanProcessor(q.exp,
		sdktrace.WithMaxQueueSize(room),
		sdktrace.WithMaxExportBatchSize(cfg.MaxExportBatchSize),
		sdktrace.WithBatchTimeout(cfg.ScheduleDelay),
		// Each attempt has its own timeout; keeping a batch while the
		// collector is down outlasts any bound on the whole.
		sdktrace.WithExportTimeout(0))
	return q
}

func (q *spanQueue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (q *spanQueue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	q.c.ended(s)
	if q.stopped.Load() {
		q.c.add(Stats{Dropped: 1})
		return
	}
	select {
	case q.slots <- struct{}{}:
		q.bsp.OnEnd(s)
		return
	default:
	}
	if q.block != nil {
		select {
		case q.slots <- struct{}{}:
			q.bsp.OnEnd(s)
			return
		case <-q.block.Done():
			if q.hold(s) {
				return
			}
		case <-q.stopc:
		}
	}
	q.c.add(Stats{Dropped: 1})
}

// release frees the room of n spans whose outcome is counted.
func (q *spanQueue) release(n int) {
	for range n {
		select {
		case <-q.slots:
		default: // held spans sent at Shutdown took no room
		}
	}
}

// hold keeps s for the next flush, up to a queue's worth, and reports
// whether it did.
func (q *spanQueue) hold(s sdktrace.ReadOnlySpan) bool {
	q.heldMu.Lock()
	defer q.heldMu.Unlock()
	if len(q.held) >= cap(q.slots) || q.stopped.Load() {
		return false
	}
	q.held = append(q.held, s)
	return true
}

// takeHeld returns the held spans and forgets them.
func (q *spanQueue) takeHeld() []sdktrace.ReadOnlySpan {
	q.heldMu.Lock()
	defer q.heldMu.Unlock()
	h := q.held
	q.held = nil
	return h
}

// ForceFlush exports everything queued so far, and the held spans that
// find room.
func (q *spanQueue) ForceFlush(ctx context.Context) error {
	if q.stopped.Load() {
		return nil
	}
	held := q.takeHeld()
	for i, s := range held {
		select {
		case q.slots <- struct{}{}:
			q.bsp.OnEnd(s)
			continue
		default:
		}
		q.heldMu.Lock()
		q.held = append(held[i:], q.held...)
		q.heldMu.Unlock()
		break
	}
	return q.bsp.ForceFlush(ctx)
}

// Shutdown exports what is queued and held, bounded by ctx, then shuts
// the exporter down. When ctx ends first, the export in flight is
// cancelled: its batch is spooled or counted failed.
func (q *spanQueue) Shutdown(ctx context.Context) error {
	q.stopOnce.Do(func() {
		q.stopped.Store(true)
		close(q.stopc)
		q.exp.stop()
		err := q.bsp.Shutdown(ctx)
		if ctx.Err() != nil {
			q.exp.abort()
			// Wait for the cancelled export's outcome, or the books
			// would count it dropped while the spool sends it later too.
			t := time.NewTimer(abortWait)
			select {
			case <-q.exp.drained:
			case <-t.C:
			}
			t.Stop()
		}
		if held := q.takeHeld(); len(held) > 0 {
			_ = q.exp.ExportSpans(ctx, held)
		}
		q.stopErr = errors.Join(err, q.exp.exp.Shutdown(ctx))
	})
	return q.stopErr
}

// abortWait bounds the wait for an export cancelled at shutdown.
const abortWait = 2 * time.Second
