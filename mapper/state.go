package mapper

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
)

// span is one open span and the context that holds it.
type span struct {
	trace.Span
	ctx   context.Context
	start time.Time
}

type chat struct {
	span
	firstChunk bool
}

type compaction struct {
	span
	parentID trace.SpanID // the span it hangs from, to close it with that span
}

type run struct {
	root     trace.Span
	rootCtx  context.Context
	rootSpan span

	agentRun   *span
	turn       *span
	chat       *chat
	tools      map[string]*span
	toolOrder  []string // open tool ids, oldest first, for innermost-first closing
	toolUpdate map[string]int
	compaction *compaction
	retry      *span

	agentRuns, turns, toolCalls, toolErrors, retries, compactions int
	extensionErrors                                               int
	turnToolCalls                                                 int

	usage     event.Usage
	provider  string
	model     string
	lastStop  string
	lastError string
	aborted   bool
	lastEnd   time.Time
	willRetry bool // the last compaction_end or agent_end said a retry follows
}

func (r *run) expectingContinuation() bool {
	// An open retry or compaction span is itself the pending continuation.
	return r.retry != nil || r.compaction != nil || r.willRetry
}

// innermost is the span new events and children attach to.
func (r *run) innermost() *span {
	switch {
	case r.chat != nil:
		return &r.chat.span
	case r.turn != nil:
		return r.turn
	case r.agentRun != nil:
		return r.agentRun
	}
	return &r.rootSpan
}

// container is where a new child span hangs: a turn, else a run, else root.
func (r *run) container() *span {
	switch {
	case r.turn != nil:
		return r.turn
	case r.agentRun != nil:
		return r.agentRun
	}
	return &r.rootSpan
}

func (m *Mapper) start(parent context.Context, name string, kind trace.SpanKind, at time.Time, attrs ...attribute.KeyValue) span {
	ctx, s := m.tracer.Start(parent, name,
		trace.WithSpanKind(kind), trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	return span{Span: s, ctx: ctx, start: at}
}
