package agentmap

import (
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// maxOpenCompactions bounds the compactions open at once; Pi overlaps two
// at most.
const maxOpenCompactions = 8

func (m *Mapper) compactionStart(ev *event.Event, at time.Time) *compaction {
	if len(m.comps) >= maxOpenCompactions {
		m.anomaly("too many open compactions")
		m.endCompaction(m.comps[0], at, vocab.CompactionUnfinished)
	}
	parent := m.cfg.parent
	var parentID trace.SpanID
	r := m.run
	var path spanid.Path
	if r != nil {
		p := r.container()
		parent, parentID = p.ctx, p.SpanContext().SpanID()
		path = spanid.Path{Kind: "compaction", N: r.compactions}
		r.compactions++
		r.openComps++
	} else if m.idleParent != nil {
		// Compaction with no run open (RPC `compact` while idle): its own
		// short trace, or under ParentNextIdleCompaction's span.
		parent, m.idleParent = m.idleParent, nil
	}
	if r == nil && m.ident.key != "" {
		// A trace of its own, named by the input as a root is.
		parent = spanid.WithKey(parent, m.ident.key, spanid.Path{})
	}
	attrs := []attribute.KeyValue{vocab.CompactionReasonKey.String(ev.Reason)}
	if r != nil && r.model != "" {
		// Pi summarises with the run's model: its cost belongs there.
		attrs = appendProviderAttrs(attrs, r.provider)
		attrs = append(attrs, semconv.GenAIRequestModel(r.model))
	}
	c := &compaction{parentID: parentID, run: r}
	m.start(&c.span, parent, path, vocab.SpanCompaction, trace.SpanKindInternal, at, attrs...)
	m.comps = append(m.comps, c)
	return c
}

func (m *Mapper) compactionEnd(ev *event.Event, at time.Time) {
	c := m.oldestCompaction()
	if c == nil {
		m.anomaly("compaction_end without compaction_start")
		c = m.compactionStart(ev, at)
	}
	attrs := []attribute.KeyValue{}
	if ev.Aborted != nil {
		attrs = append(attrs, vocab.CompactionAbortedKey.Bool(*ev.Aborted))
	}
	if ev.WillRetry != nil {
		attrs = append(attrs, vocab.CompactionWillRetryKey.Bool(*ev.WillRetry))
	}
	if res := ev.Compaction; res != nil {
		if res.TokensBefore != nil {
			attrs = append(attrs, vocab.CompactionTokensBeforeKey.Int64(*res.TokensBefore))
		}
		if res.EstimatedTokensAfter != nil {
			attrs = append(attrs, vocab.CompactionTokensAfterKey.Int64(*res.EstimatedTokensAfter))
		}
		if u := res.Usage; u != nil {
			// Summarising is a model call too: its own chat span, and the
			// run's cost.
			m.summaryCall(c, u, res.Summary, at)
			if m.run != nil {
				m.run.usage.Add(u)
			}
		}
		if res.Summary != "" && (ev.Aborted == nil || !*ev.Aborted) {
			m.compactedContent(res.Summary)
		}
	}
	c.SetAttributes(attrs...)
	outcome := vocab.CompactionOK
	switch {
	case ev.Aborted != nil && *ev.Aborted:
		outcome = vocab.CompactionAborted
	case len(ev.Result) == 0 || string(ev.Result) == "null":
		outcome = vocab.CompactionError
		c.SetStatus(codes.Error, m.errorText(ev.ErrorMessage))
	}
	if r := m.run; r != nil && ev.WillRetry != nil && *ev.WillRetry {
		r.willRetry = true
	}
	m.conv.compacted = m.conv.compacted || outcome == vocab.CompactionOK
	m.endCompaction(c, at, outcome)
}

// oldestCompaction is the open compaction the next compaction_end closes:
// Pi ends overlapping compactions in the order it started them.
func (m *Mapper) oldestCompaction() *compaction {
	if len(m.comps) == 0 {
		return nil
	}
	return m.comps[0]
}

// endCompactions ends, newest first, every open compaction that which
// selects, as unfinished.
func (m *Mapper) endCompactions(at time.Time, which func(*compaction) bool) {
	for i := len(m.comps) - 1; i >= 0; i-- {
		if c := m.comps[i]; which(c) {
			m.endCompaction(c, at, vocab.CompactionUnfinished)
		}
	}
}

func (m *Mapper) endCompaction(c *compaction, at time.Time, outcome vocab.CompactionOutcome) {
	if i := slices.Index(m.comps, c); i >= 0 {
		m.comps = slices.Delete(m.comps, i, i+1)
	}
	if c.run != nil {
		c.run.openComps--
		c.run.lastEnd = at
	}
	if outcome == vocab.CompactionUnfinished {
		c.SetAttributes(vocab.UnfinishedKey.Bool(true))
		c.SetStatus(codes.Error, "compaction did not finish")
	}
	c.SetAttributes(outcome.Attr())
	c.finish(at)
}

func (m *Mapper) summarizationRetry(ev *event.Event, at time.Time) {
	attrs := []attribute.KeyValue{vocab.PhaseKey.String(ev.Type)}
	if ev.Attempt > 0 {
		attrs = append(attrs, vocab.RetryAttemptKey.Int(ev.Attempt),
			vocab.RetryMaxAttemptsKey.Int(ev.MaxAttempts),
			vocab.RetryDelayMsKey.Float64(ev.DelayMs))
	}
	if ev.ErrorMessage != "" {
		attrs = append(attrs, vocab.RetryErrorKey.String(m.errorText(ev.ErrorMessage)))
	}
	if ev.Source != "" {
		attrs = append(attrs, vocab.RetrySourceKey.String(ev.Source))
	}
	var target trace.Span
	switch c := m.oldestCompaction(); {
	case c != nil:
		target = c
	case m.run != nil:
		target = m.run.innermost()
	default:
		m.anomaly(ev.Type + " with nothing open")
		return
	}
	target.AddEvent(vocab.EventSummarizationRetry, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}
