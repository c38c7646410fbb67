package rpc

import (
	"slices"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// A prompt's response arrives before agent_start and says whether a run
// starts (disposition "started"), the prompt was queued, handled by an
// extension, or rejected. Where the prompt's span goes, and whether it
// opens a root, depends on that answer, while what happens between the
// prompt and its response (an input handler's dialog, a compaction before
// the run) belongs inside that root. So tracing holds records from a
// prompt until its response arrives, then traces them in their original
// order and times, knowing the answer. Forwarding is never held.

// hold queues it (copying its bytes) and traces what can be traced.
func (t *Tracker) hold(it item) {
	it.rec = append([]byte(nil), it.rec...)
	t.queue = append(t.queue, it)
	t.qbytes += len(it.rec)
	if len(t.queue) == 1 || it.resp != nil {
		t.dirty = true
	}
	t.pump(false)
}

// pump traces held records until it reaches a prompt whose response has
// not arrived; force decides such prompts without it.
func (t *Tracker) pump(force bool) {
	for len(t.queue) > 0 {
		head := &t.queue[0]
		if c := head.cmd; c != nil && c.name == "prompt" && !head.fromPi && !c.decision.known {
			if !t.dirty || !t.lookahead(c) {
				t.dirty = false
				if !force && !t.overLimit(head) {
					return
				}
				t.forceDecision(c)
			}
		}
		it := *head
		t.queue[0] = item{}
		t.queue = t.queue[1:]
		t.qbytes -= len(it.rec)
		t.dirty = true
		t.handle(it)
	}
	t.queue = t.queue[:0]
	t.dirty = false
}

// lookahead searches the held records for the response to the prompt c at
// the head of the queue. Responses with the same id and command go to
// commands in the order they were sent, so the ones owed to earlier
// commands still waiting are skipped.
func (t *Tracker) lookahead(c *command) bool {
	skip := 0
	for _, p := range t.pending.byKey[c.key] {
		if !p.claimed {
			skip++
		}
	}
	for i := 1; i < len(t.queue); i++ {
		it := &t.queue[i]
		if it.resp == nil || it.claimed || it.resp.key() != c.key {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		it.claimed = true
		c.claimed = true
		c.decision = decision{known: true, success: it.resp.Success, disposition: it.resp.data().Disposition}
		return true
	}
	return false
}

func (t *Tracker) overLimit(head *item) bool {
	return len(t.queue) > t.cfg.holdRecords || t.qbytes > t.cfg.holdBytes ||
		t.last.Sub(head.at) > t.cfg.holdFor
}

// forceDecision places a prompt whose response is not in sight: it started
// a run if Pi has begun one since, otherwise it is traced where it stands.
func (t *Tracker) forceDecision(c *command) {
	t.stats.LookaheadForced++
	c.decision = decision{known: true}
	if slices.ContainsFunc(t.queue[1:], func(it item) bool { return it.typ == event.TypeAgentStart }) {
		c.decision.success, c.decision.disposition = true, string(vocab.DispositionStarted)
	}
}

// decision is what a prompt's response says.
type decision struct {
	known       bool
	success     bool
	disposition string
}

func (d decision) started() bool {
	return d.success && d.disposition == string(vocab.DispositionStarted)
}
