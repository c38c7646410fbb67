package agentmap

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

func (m *Mapper) turnStart(at time.Time) {
	r := m.ensureRun(at, "turn_start")
	if r.turn != nil {
		m.anomaly("turn_start inside a turn")
		m.endTurn(at, true)
	}
	s := new(span)
	m.start(s, r.container().ctx, spanid.Path{Kind: "turn", N: r.turns}, vocab.SpanTurn, trace.SpanKindInternal, at, vocab.TurnIndexKey.Int(r.turns))
	r.turns++
	r.turnToolCalls = 0
	r.turn = s
}

func (m *Mapper) turnEnd(at time.Time) {
	if m.run == nil || m.run.turn == nil {
		m.anomaly("turn_end without turn_start")
		return
	}
	m.endTurn(at, false)
}

// endTurn closes the open turn and its open children.
func (m *Mapper) endTurn(at time.Time, unfinished bool) {
	r := m.run
	if r.chat != nil {
		if r.chat.rec {
			r.chat.SetAttributes(vocab.UnfinishedKey.Bool(true))
		}
		r.chat.finish(at)
		r.chat = nil
	}
	for r.tools.newest != nil {
		m.endTool(r.tools.newest, at, vocab.UnfinishedKey.Bool(true))
	}
	if r.turn == nil {
		return
	}
	id := r.turn.SpanContext().SpanID()
	m.endCompactions(at, func(c *compaction) bool { return c.parentID == id })
	if r.turn.rec {
		if unfinished {
			r.turn.SetAttributes(vocab.UnfinishedKey.Bool(true))
		}
		r.turn.SetAttributes(vocab.TurnToolCallsKey.Int(r.turnToolCalls))
	}
	r.turn.finish(at)
	r.turn = nil
}
