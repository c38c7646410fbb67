package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

var errUnreachable = errors.New("connection refused")

// downExporter fails every export while its collector is down. Like the
// OTLP exporters' watch, isDown tells what the last attempt found.
type downExporter struct {
	mu       sync.Mutex
	down     bool
	lastDown bool
	fail     error // returned when down
	calls    int
	exported int
	called   chan struct{} // gets a value on every call
}

func newDownExporter(down bool) *downExporter {
	return &downExporter{down: down, fail: errUnreachable, called: make(chan struct{}, 1000)}
}

func (d *downExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	d.mu.Lock()
	defer func() { d.called <- struct{}{} }()
	defer d.mu.Unlock()
	d.calls++
	d.lastDown = d.down
	if d.down {
		return d.fail
	}
	d.exported += len(spans)
	return nil
}

func (d *downExporter) Shutdown(context.Context) error { return nil }

func (d *downExporter) isDown() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastDown
}

func (d *downExporter) setDown(v bool) {
	d.mu.Lock()
	d.down = v
	d.mu.Unlock()
}

func retainBatch() Batch {
	return Batch{MaxQueueSize: 4, MaxExportBatchSize: 2, ScheduleDelay: time.Millisecond, ExportTimeout: time.Hour}
}

// A batch that failed because the collector is down is kept and tried
// again; once the collector is back it goes through, and nothing counts as
// failed. Spans ending meanwhile wait in the queue, the overflow is dropped.
func TestSpanQueueRetainsWhileDown(t *testing.T) {
	exp := newDownExporter(true)
	c := newCounters()
	var reported int
	b := newSpanQueue(exp, retainBatch(), c, func(error) { reported++ }, nil, retainWhile(exp.isDown, time.Millisecond))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 2)
	for range 3 { // the first attempt and two retries of the same batch
		<-exp.called
	}
	endSpans(tp, 6) // four fit in the queue
	if s, _ := c.snapshot(); s.Failed != 0 || s.Dropped != 2 || s.Pending() != 6 {
		t.Fatalf("while down: %+v (pending %d)", s, s.Pending())
	}
	exp.setDown(false)
	// The next retry delivers the kept batch, then the queue follows.
	wait.For(t, time.Minute, func() bool { s, _ := c.snapshot(); return s.Exported == 6 },
		func() string { s, _ := c.snapshot(); return fmt.Sprintf("the kept batch never went through: %+v", s) })
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.freeze(true)
	if s, _ := c.snapshot(); s.Exported != 6 || s.Failed != 0 || s.Dropped != 2 {
		t.Errorf("after the collector came back: %+v", s)
	}
	if reported == 0 {
		t.Error("the failures were not reported")
	}
}

// Failures while the collector is reachable (refused credentials, a
// timeout) are not retried by the span queue.
func TestSpanQueueFailsWhenNotDown(t *testing.T) {
	exp := newDownExporter(true)
	c := newCounters()
	// The two spans fill one batch: no schedule delay may send the first
	// alone, a second call that is no retry.
	b := newSpanQueue(exp, testBatch(), c, nil, nil, retainWhile(func() bool { return false }, time.Millisecond))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 2)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.snapshot(); s.Failed != 2 || exp.calls != 1 {
		t.Errorf("stats %+v after %d calls", s, exp.calls)
	}
}

// Shutdown ends the retention: one last attempt, then the batch fails,
// even with a flush timeout of an hour.
func TestSpanQueueRetentionEndsAtShutdown(t *testing.T) {
	exp := newDownExporter(true)
	c := newCounters()
	// The queue reports a failure it retains just before its pause; the
	// exporter's return comes earlier, before the queue has decided, and
	// a Shutdown then ends the retention before it began.
	retained := make(chan struct{}, 1)
	onError := func(error) {
		select {
		case retained <- struct{}{}:
		default:
		}
	}
	// The two spans fill one batch, as in TestSpanQueueFailsWhenNotDown.
	b := newSpanQueue(exp, testBatch(), c, onError, nil, retainWhile(exp.isDown, time.Hour))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 2)
	<-retained // the span queue now pauses for an hour before retrying
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ := c.snapshot(); s.Failed != 2 || exp.calls != 2 {
		t.Errorf("stats %+v after %d calls", s, exp.calls)
	}
}

// Traces are counted by their roots, so a long session keeps no trace ids;
// roots continuing a caller's trace count that trace once.
func TestCountersCountTracesByRoot(t *testing.T) {
	c := newCounters()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(countOnly{c}))
	tr := tp.Tracer("t")
	for range 1000 {
		ctx, root := tr.Start(context.Background(), "root")
		_, child := tr.Start(ctx, "child")
		child.End()
		root.End()
	}
	caller := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	for range 3 {
		_, s := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), caller), "continued")
		s.End()
	}
	s, first := c.snapshot()
	if s.Traces != 1001 || s.Ended != 2003 || len(c.remote) != 1 {
		t.Errorf("stats %+v, %d remote ids kept", s, len(c.remote))
	}
	if !first.IsValid() {
		t.Error("no first trace id")
	}
}
