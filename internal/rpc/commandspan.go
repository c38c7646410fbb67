package rpc

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// command opens the span of one command.
func (t *Tracker) command(c *command) {
	t.stats.Commands++
	switch {
	case c.name != "prompt" || !c.decision.started():
		t.startCommand(c, t.m.RootContext())
	case t.m.Active():
		// The run before it has not settled yet in the stream: the
		// prompt opens its root once it has (see openDeferred).
		c.deferred = true
	default:
		t.openDeferred(c)
	}
	t.pending.add(c)
	for t.pending.len() > t.cfg.maxPending {
		old := t.pending.oldest()
		t.pending.remove(old)
		t.stats.Evicted++
		t.unanswered(old, vocab.EndEvicted, c.at)
	}
}

// startCommand starts c's span under parent. Outside a run the span is a
// short trace of its own (or a child of the caller's TRACEPARENT), linked
// to the latest run so that a reader can walk from one to the other.
func (t *Tracker) startCommand(c *command, parent context.Context) {
	// pi.rpc.command is a metric label: it only takes the bounded set of
	// span names; a type Pi does not know is kept beside it.
	attrs := []attribute.KeyValue{vocab.RPCCommandKey.String(c.name)}
	if c.name == nameUnknown && c.typ != "" {
		attrs = append(attrs, vocab.RPCTypeKey.String(clip(c.typ, 64)))
	}
	if c.id != "" {
		attrs = append(attrs, vocab.RPCIDKey.String(c.id))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(c.at)}
	opts = append(opts, t.sessionOptions(&attrs)...)
	opts = append(opts, trace.WithAttributes(attrs...))
	c.ctx, c.span = t.tracer.Start(parent, vocab.SpanRPC.Name(c.name), opts...)
}

// sessionOptions adds the session id, once known, and when no run is open
// a link to the latest run.
func (t *Tracker) sessionOptions(attrs *[]attribute.KeyValue) []trace.SpanStartOption {
	if id := t.m.SessionID(); id != "" {
		*attrs = append(*attrs, semconv.GenAIConversationID(id))
	}
	if t.m.Active() {
		return nil
	}
	if last := t.m.LastRoot(); last.IsValid() {
		return []trace.SpanStartOption{trace.WithLinks(trace.Link{
			SpanContext: last,
			Attributes:  []attribute.KeyValue{vocab.LinkKey.String(vocab.LinkPreviousRun)},
		})}
	}
	return nil
}

// openDeferred gives a started prompt its span, and its root when no run
// is open.
func (t *Tracker) openDeferred(c *command) {
	c.deferred = false
	if t.m.Active() {
		t.startCommand(c, t.m.RootContext())
		return
	}
	t.stats.Runs++
	t.startCommand(c, t.m.Open(c.at))
}

// unanswered ends a command that never got its response.
func (t *Tracker) unanswered(c *command, reason vocab.EndReason, at time.Time) {
	if c.deferred {
		t.openDeferred(c)
	}
	c.span.SetAttributes(vocab.UnfinishedKey.Bool(true), reason.Attr())
	if c.name == "bash" {
		c.span.SetAttributes(bashCounts(c)...)
	}
	c.span.SetStatus(codes.Error, "no response: "+string(reason))
	c.span.End(trace.WithTimestamp(at))
}
