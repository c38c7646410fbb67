package rpc

import (
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/event"
)

// compactionSpan is a manual compaction with no run open: the `compact`
// command's work, traced under that command's span. The mapper would make
// it a trace of its own, apart from the command that caused it.
type compactionSpan struct {
	span trace.Span
}

// idleCompaction handles compaction records while no run is open and a
// compact command waits. It reports false to leave the record to the mapper.
func (t *Tracker) idleCompaction(typ string, rec []byte, at time.Time) bool {
	if typ == event.TypeCompactionEnd {
		if t.compaction == nil {
			return false
		}
		ev, _ := event.Decode(rec, t.decode)
		t.endCompaction(&ev, at)
		return true
	}
	if t.m.Active() {
		return false
	}
	var cmd *command
	for _, c := range t.pending.all() {
		if c.name == "compact" && c.span != nil {
			cmd = c
		}
	}
	if cmd == nil {
		return false
	}
	if t.compaction != nil {
		t.endCompaction(nil, at)
	}
	ev, _ := event.Decode(rec, t.decode)
	_, s := t.tracer.Start(cmd.ctx, "pi.compaction",
		trace.WithTimestamp(at),
		trace.WithAttributes(attribute.String("pi.compaction.reason", ev.Reason)))
	t.compaction = &compactionSpan{span: s}
	return true
}

// endCompaction ends the idle compaction with what compaction_end says,
// or as unfinished when ev is nil.
func (t *Tracker) endCompaction(ev *event.Event, at time.Time) {
	s := t.compaction.span
	t.compaction = nil
	if ev == nil {
		s.SetAttributes(attribute.Bool("pi.unfinished", true), attribute.String("pi.compaction.outcome", "unfinished"))
		s.SetStatus(codes.Error, "compaction did not finish")
		s.End(trace.WithTimestamp(at))
		return
	}
	var attrs []attribute.KeyValue
	if ev.Aborted != nil {
		attrs = append(attrs, attribute.Bool("pi.compaction.aborted", *ev.Aborted))
	}
	if ev.WillRetry != nil {
		attrs = append(attrs, attribute.Bool("pi.compaction.will_retry", *ev.WillRetry))
	}
	var res struct {
		TokensBefore         *int64 `json:"tokensBefore"`
		EstimatedTokensAfter *int64 `json:"estimatedTokensAfter"`
	}
	hasResult := len(ev.Result) > 0 && string(ev.Result) != "null" && json.Unmarshal(ev.Result, &res) == nil
	if res.TokensBefore != nil {
		attrs = append(attrs, attribute.Int64("pi.compaction.tokens_before", *res.TokensBefore))
	}
	if res.EstimatedTokensAfter != nil {
		attrs = append(attrs, attribute.Int64("pi.compaction.estimated_tokens_after", *res.EstimatedTokensAfter))
	}
	outcome := "ok"
	switch {
	case ev.Aborted != nil && *ev.Aborted:
		outcome = "aborted"
	case !hasResult:
		outcome = "error"
		s.SetStatus(codes.Error, clip(ev.ErrorMessage, 512))
	}
	attrs = append(attrs, attribute.String("pi.compaction.outcome", outcome))
	s.SetAttributes(attrs...)
	s.End(trace.WithTimestamp(at))
}
