package mapper

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/mapper/piconv"
)

// Close ends a stream that stopped without settling: every open span ends,
// innermost first, and the root records why.
func (m *Mapper) Close(end Ending, at time.Time) {
	// Idle compactions, if any.
	defer m.endCompactions(at, func(*compaction) bool { return true })
	r := m.run
	if r == nil {
		return
	}
	// Pi before 1.x: a run whose last agent_end left nothing pending has
	// finished as far as that protocol can say.
	if m.legacy && r.agentRun == nil && !r.expectingContinuation() {
		m.closeRoot(r.lastEnd, piconv.EndAgentEnd, false)
		return
	}
	r.root.SetAttributes(piconv.UnfinishedKey.Bool(true))
	if end.Reason == EndSignal || end.Reason == EndExit {
		r.root.SetAttributes(piconv.ExitCodeKey.Int(end.ExitCode))
	}
	if end.Signal != "" {
		r.root.SetAttributes(piconv.SignalKey.String(end.Signal))
	}
	m.closeRoot(at, piconv.EndReason(end.Reason), false)
}

// closeRoot ends everything open, innermost first, then the root.
func (m *Mapper) closeRoot(at time.Time, reason piconv.EndReason, settled bool) {
	r := m.run
	unfinished := reason != piconv.EndSettled && reason != piconv.EndAgentEnd
	if r.agentRun != nil {
		m.endAgentRun(at, unfinished)
	} else {
		m.endTurn(at, unfinished)
	}
	m.endCompactions(at, func(c *compaction) bool { return c.run == r })
	if r.retry != nil {
		outcome := piconv.RetryUnfinished
		if !unfinished {
			// Settled with a retry still open: Pi gave up without saying so.
			outcome = piconv.RetryFailed
		}
		m.endRetry(at, outcome, "")
	}

	outcome := piconv.OutcomeOK
	switch {
	case unfinished:
		outcome = piconv.OutcomeUnsettled
	case r.aborted || r.lastStop == "aborted":
		outcome = piconv.OutcomeAborted
	case r.lastStop == "error":
		outcome = piconv.OutcomeError
	}
	root := r.root
	attrs := []attribute.KeyValue{
		piconv.SettledKey.Bool(settled),
		piconv.AbortedKey.Bool(r.aborted || r.lastStop == "aborted"),
		reason.Attr(),
		outcome.Attr(),
		piconv.AgentRunsKey.Int(r.agentRuns),
		piconv.TurnsKey.Int(r.turns),
		piconv.ToolCallsKey.Int(r.toolCalls),
		piconv.ToolErrorsKey.Int(r.toolErrors),
		piconv.RetriesKey.Int(r.retries),
		piconv.CompactionsKey.Int(r.compactions),
		piconv.CostTotalKey.Float64(r.usage.Cost.Total),
	}
	attrs = append(attrs, usageAttrs(&r.usage)...)
	if r.provider != "" {
		attrs = append(attrs, providerAttrs(r.provider)...)
	}
	if r.model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(r.model))
	}
	if r.toolsEvicted > 0 {
		attrs = append(attrs, piconv.ToolsEvictedKey.Int(r.toolsEvicted))
	}
	if r.extensionErrors > 0 {
		attrs = append(attrs, piconv.ExtensionErrorsKey.Int(r.extensionErrors))
	}
	attrs = append(attrs, r.nested.attrs()...)
	root.SetAttributes(attrs...)
	switch outcome {
	case piconv.OutcomeError:
		root.SetStatus(codes.Error, r.lastError)
	case piconv.OutcomeUnsettled:
		root.SetStatus(codes.Error, "run did not settle: "+string(reason))
	}
	r.rootSpan.finish(at)
	m.run = nil
}
