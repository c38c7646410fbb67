package telemetry

import (
	"context"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
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

// add counts what became of spans; d's Traces and Ended are not read.
func (c *counters) add(d Stats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen {
		return
	}
	c.s.Exported += d.Exported
	c.s.Failed += d.Failed
	c.s.Dropped += d.Dropped
	c.s.Spooled += d.Spooled
	c.s.Refused += d.Refused
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
