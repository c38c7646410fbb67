package agentmap

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/pi-otel/pi-otel/mapper/vocab"
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
		m.closeRoot(r.lastEnd, vocab.EndAgentEnd, false)
		return
	}
	r.root.SetAttributes(vocab.UnfinishedKey.Bool(true))
	if end.Reason == vocab.EndSignal || end.Reason == vocab.EndExit {
		r.root.SetAttributes(vocab.ExitCodeKey.Int(end.ExitCode))
	}
	if end.Signal != "" {
		r.root.SetAttributes(vocab.SignalKey.String(end.Signal))
	}
	m.closeRoot(at, end.Reason, false)
}

// closeRoot ends everything open, innermost first, then the root.
func (m *Mapper) closeRoot(at time.Time, reason vocab.EndReason, settled bool) {
	r := m.run
	unfinished := reason != vocab.EndSettled && reason != vocab.EndAgentEnd
	if r.agentRun != nil {
		m.endAgentRun(at, unfinished)
	} else {
		m.endTurn(at, unfinished)
	}
	m.endCompactions(at, func(c *compaction) bool { return c.run == r })
	if r.retry != nil {
		outcome := vocab.RetryUnfinished
		if !unfinished {
			// Settled with a retry still open: Pi gave up without saying so.
			outcome = vocab.RetryFailed
		}
		m.endRetry(at, outcome, "")
	}

	outcome := vocab.OutcomeOK
	switch {
	case unfinished:
		outcome = vocab.OutcomeUnsettled
	case r.aborted || r.lastStop == "aborted":
		outcome = vocab.OutcomeAborted
	case r.lastStop == "error":
		outcome = vocab.OutcomeError
	}
	root := r.root
	attrs := []attribute.KeyValue{
		vocab.SettledKey.Bool(settled),
		vocab.AbortedKey.Bool(r.aborted || r.lastStop == "aborted"),
		reason.Attr(),
		outcome.Attr(),
		vocab.AgentRunsKey.Int(r.agentRuns),
		vocab.TurnsKey.Int(r.turns),
		vocab.ToolCallsKey.Int(r.toolCalls),
		vocab.ToolErrorsKey.Int(r.toolErrors),
		vocab.RetriesKey.Int(r.retries),
		vocab.CompactionsKey.Int(r.compactions),
		vocab.CostTotalKey.Float64(r.usage.Cost.Total),
	}
	attrs = appendUsageAttrs(attrs, &r.usage)
	if r.provider != "" {
		attrs = appendProviderAttrs(attrs, r.provider)
	}
	attrs = r.rootGenAIAttrs(attrs, outcome, reason)
	attrs = m.rootContentAttrs(r, attrs)
	if r.toolsEvicted > 0 {
		attrs = append(attrs, vocab.ToolsEvictedKey.Int(r.toolsEvicted))
	}
	if r.extensionErrors > 0 {
		attrs = append(attrs, vocab.ExtensionErrorsKey.Int(r.extensionErrors))
	}
	attrs = append(attrs, r.nested.attrs()...)
	attrs = append(attrs, r.skills.list()...)
	root.SetAttributes(attrs...)
	switch outcome {
	case vocab.OutcomeError:
		root.SetStatus(codes.Error, r.lastError)
	case vocab.OutcomeUnsettled:
		root.SetStatus(codes.Error, "run did not settle: "+string(reason))
	}
	r.root.finish(at)
	m.run = nil
}
