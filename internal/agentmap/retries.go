package agentmap

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/piconv"
)

func (m *Mapper) retryStart(ev *event.Event, at time.Time) {
	r := m.ensureRun(at, "auto_retry_start")
	if r.retry != nil {
		m.endRetry(at, piconv.RetryFailed, "")
	}
	s := m.start(r.rootCtx, piconv.SpanRetry, trace.SpanKindInternal, at,
		piconv.RetryAttemptKey.Int(ev.Attempt),
		piconv.RetryMaxAttemptsKey.Int(ev.MaxAttempts),
		piconv.RetryDelayMsKey.Float64(ev.DelayMs),
		piconv.RetryErrorKey.String(m.errorText(ev.ErrorMessage)))
	r.retry = &s
	r.retries++
}

func (m *Mapper) retryEnd(ev *event.Event, at time.Time) {
	r := m.ensureRun(at, "auto_retry_end")
	if r.retry == nil {
		m.anomaly("auto_retry_end without auto_retry_start")
		m.retryStart(&event.Event{Attempt: ev.Attempt}, at)
	}
	outcome := piconv.RetryExhausted
	if ev.Success != nil && *ev.Success {
		outcome = piconv.RetrySuccess
	}
	m.endRetry(at, outcome, ev.FinalError)
}

func (m *Mapper) endRetry(at time.Time, outcome piconv.RetryOutcome, finalError string) {
	r := m.run
	s := r.retry
	attrs := []attribute.KeyValue{
		outcome.Attr(),
		piconv.RetrySuccessKey.Bool(outcome == piconv.RetrySuccess),
	}
	if finalError != "" {
		attrs = append(attrs, piconv.RetryFinalErrorKey.String(m.errorText(finalError)))
	}
	s.SetAttributes(attrs...)
	switch outcome {
	case piconv.RetryExhausted:
		s.SetStatus(codes.Error, "retries exhausted")
	case piconv.RetryUnfinished:
		s.SetAttributes(piconv.UnfinishedKey.Bool(true))
		s.SetStatus(codes.Error, "retry did not finish")
	}
	s.finish(at)
	r.retry = nil
}
