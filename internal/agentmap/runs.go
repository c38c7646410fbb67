package agentmap

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

func (m *Mapper) openRoot(at time.Time) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(vocab.AgentName),
	}
	key, live := m.ident.key, m.ident.key == ""
	if live {
		// A live run: a random key, or the one ReserveRoot gave out.
		key, m.nextLive = m.nextLive, ""
		if key == "" {
			key = spanid.NewLiveKey()
		}
	}
	r := &run{
		tools:     newToolSet(),
		lastEnd:   at,
		key:       key,
		toolSeen:  map[string]int{},
		uncounted: m.ident.uncounted,
		live:      live,
	}
	// No run is open yet: the root is named here, not by start.
	m.start(&r.root, r.root.named.Name(m.cfg.parent, key, spanid.Path{}), spanid.Path{}, vocab.SpanRoot, trace.SpanKindInternal, at, attrs...)
	r.derived = r.root.SpanContext().SpanID() == spanid.SpanID(key, spanid.Path{})
	m.run = r
	m.stats.Roots++
	m.lastRoot = r.root.SpanContext()
}

// ensureRun opens a root for events that arrive with none open, e.g. a
// replay that starts mid-run.
func (m *Mapper) ensureRun(at time.Time, what string) *run {
	if m.run == nil {
		m.anomaly(what + " without agent_start")
		m.openRoot(at)
	}
	return m.run
}

func (m *Mapper) agentStart(at time.Time) {
	if r := m.run; r != nil && m.legacy && r.agentRun == nil && !r.expectingContinuation() {
		// Pi before 1.x: nothing pending, so the previous run settled.
		m.closeRoot(r.lastEnd, vocab.EndAgentEnd, false)
	}
	if m.run == nil {
		m.openRoot(at)
	}
	r := m.run
	if r.agentRun != nil {
		m.anomaly("agent_start inside an agent run")
		m.endAgentRun(at, true)
	}
	r.willRetry = false
	s := new(span)
	m.start(s, r.root.ctx, spanid.Path{Kind: "run", N: r.agentRuns}, vocab.SpanAgentRun, trace.SpanKindInternal, at,
		vocab.AgentRunIndexKey.Int(r.agentRuns))
	r.agentRuns++
	r.agentRun = s
}

func (m *Mapper) agentEnd(ev *event.Event, at time.Time) {
	if ev.WillRetry == nil && !m.settledSeen {
		m.legacy = true
	}
	r := m.run
	if r == nil || r.agentRun == nil {
		m.anomaly("agent_end without agent_start")
		if r == nil {
			return
		}
	}
	if ev.WillRetry != nil {
		r.willRetry = *ev.WillRetry
		if r.agentRun != nil && r.agentRun.rec {
			r.agentRun.SetAttributes(vocab.WillRetryKey.Bool(*ev.WillRetry))
		}
	}
	m.endAgentRun(at, false)
	r.lastEnd = at
	if ev.IsTerminal != nil && *ev.IsTerminal {
		// oh-my-pi: no agent_settled follows a run's last agent_end,
		// which says so itself.
		m.legacy = false
		m.closeRoot(at, vocab.EndSettled, true)
	}
}

// endAgentRun closes the open run and everything inside it.
func (m *Mapper) endAgentRun(at time.Time, unfinished bool) {
	r := m.run
	m.endTurn(at, true)
	if r.agentRun == nil {
		return
	}
	// A compaction in a turn of the run was closed with the turn.
	id := r.agentRun.SpanContext().SpanID()
	m.endCompactions(at, func(c *compaction) bool { return c.run == r && c.parentID == id })
	if unfinished && r.agentRun.rec {
		r.agentRun.SetAttributes(vocab.UnfinishedKey.Bool(true))
	}
	if r.lastStop == "error" && r.agentRun.rec {
		r.agentRun.SetStatus(codes.Error, r.lastError)
	}
	r.agentRun.finish(at)
	r.agentRun = nil
}

func (m *Mapper) agentSettled(ev *event.Event, at time.Time) {
	m.settledSeen = true
	m.legacy = false
	r := m.run
	if r == nil {
		m.anomaly("agent_settled with nothing open")
		return
	}
	if ev.Aborted != nil && *ev.Aborted {
		r.aborted = true
	}
	m.closeRoot(at, vocab.EndSettled, true)
}
