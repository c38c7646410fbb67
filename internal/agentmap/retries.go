package agentmap

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

func (m *Mapper) retryStart(ev *event.Event, at time.Time) {
	r := m.ensureRun(at, "auto_retry_start")
	if r.retry != nil {
		m.endRetry(at, vocab.RetryFailed, "")
	}
	s := new(span)
	m.start(s, r.root.ctx, spanid.Path{Kind: "retry", N: r.retries}, vocab.SpanRetry, trace.SpanKindInternal, at,
		vocab.RetryAttemptKey.Int(ev.Attempt),
		vocab.RetryMaxAttemptsKey.Int(ev.MaxAttempts),
		vocab.RetryDelayMsKey.Float64(ev.DelayMs),
		vocab.RetryErrorKey.String(m.errorText(ev.ErrorMessage)))
	r.retry = s
	r.retries++
}

func (m *Mapper) retryEnd(ev *event.Event, at time.Time) {
	r := m.ensureRun(at, "auto_retry_end")
	if r.retry == nil {
		m.anomaly("auto_retry_end without auto_retry_start")
		m.retryStart(&event.Event{Attempt: ev.Attempt}, at)
	}
	outcome := vocab.RetryExhausted
	if ev.Success != nil && *ev.Success {
		outcome = vocab.RetrySuccess
	}
	m.endRetry(at, outcome, ev.FinalError)
}

func (m *Mapper) endRetry(at time.Time, outcome vocab.RetryOutcome, finalError string) {
	r := m.run
	s := r.retry
	attrs := []attribute.KeyValue{
		outcome.Attr(),
		vocab.RetrySuccessKey.Bool(outcome == vocab.RetrySuccess),
	}
	if finalError != "" {
		attrs = append(attrs, vocab.RetryFinalErrorKey.String(m.errorText(finalError)))
	}
	s.SetAttributes(attrs...)
	switch outcome {
	case vocab.RetryExhausted:
		s.SetStatus(codes.Error, "retries exhausted")
	case vocab.RetryUnfinished:
		s.SetAttributes(vocab.UnfinishedKey.Bool(true))
		s.SetStatus(codes.Error, "retry did not finish")
	}
	s.finish(at)
	r.retry = nil
}
