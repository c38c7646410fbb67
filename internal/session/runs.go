package session

import (
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// How entries group into runs, as agent_settled groups them in the stream.

// runBuf is an open run: its entries, held until it is complete.
type runBuf struct {
	key         string
	entries     []*entry
	pending     []*entry
	branch      *string
	lastPersist time.Time // of its last entry
	lastMsg     time.Time // of its last user, assistant or tool result message
	end         int64     // offset just past its last entry
}

// place puts an entry in the open run, a new run, or the pending list.
func (t *FileMapper) place(e *entry) {
	role := ""
	if e.msg != nil {
		role = e.msg.Role
	}
	switch {
	case role == "user":
		created := msgTime(e.msg.Timestamp)
		// Steering and follow-up messages were created while the run was
		// busy, before its last message was written: they join it. Only the
		// conversation's messages tell: extensions may write entries between
		// a prompt's creation and its persistence.
		if t.cur != nil && !created.IsZero() && created.Before(t.cur.lastMsg) {
			t.add(e)
			return
		}
		t.open(e)
	case role == "bashExecution":
		if t.cur != nil && msgTime(e.msg.Timestamp).Before(t.cur.lastPersist) {
			t.add(e)
			return
		}
		t.pending = append(t.pending, e)
	case role == "assistant" || role == "toolResult":
		if t.cur == nil {
			t.open(e) // a file that starts mid-run
			return
		}
		t.add(e)
	case e.Type == typeCompaction || e.Type == typeContextEdit || e.Type == typeUsage || e.Type == typeModelUsage ||
		e.Type == typeBranchSummary || e.Type == typeCustomMessage || role == "custom":
		if t.cur != nil {
			t.add(e)
			return
		}
		t.pending = append(t.pending, e)
	default:
		// Settings, labels, names, extension state, system prompts: part of
		// a busy run, else of the next one.
		if t.cur != nil && !t.cur.final() {
			t.add(e)
			return
		}
		t.pending = append(t.pending, e)
	}
}

func (t *FileMapper) add(e *entry) {
	r := t.cur
	r.entries = append(r.entries, e)
	if !e.persist.IsZero() {
		r.lastPersist = e.persist
		if conversation(e) {
			r.lastMsg = e.persist
		}
	}
	r.end = e.end
}

// conversation reports whether e is a message of the conversation itself:
// the user's, the model's or a tool's.
func conversation(e *entry) bool {
	if e.msg == nil {
		return false
	}
	switch e.msg.Role {
	case "user", "assistant", "toolResult":
		return true
	}
	return false
}

// injected reports whether e is an entry an extension wrote.
func injected(e *entry) bool {
	return e.Type == typeCustom || e.Type == typeCustomMessage || e.msg != nil && e.msg.Role == "custom"
}

// open completes the open run, if any, and opens one at e.
func (t *FileMapper) open(e *entry) {
	var moved []*entry
	if r := t.cur; r != nil {
		moved = r.cutInjected(msgTime(e.msg.Timestamp))
		// A run that had not reached a final answer when the next began was
		// cut short (Pi killed mid-run, then resumed): closed unsettled.
		t.finish(r, r.final(), agentmap.Ending{Reason: vocab.EndEOF})
	}
	t.flushBash()
	pending := t.pending
	if moved != nil {
		pending = append(moved, pending...)
	}
	r := &runBuf{key: t.hdr.ID + "/" + e.ID, pending: pending, branch: t.branchFrom}
	t.pending, t.branchFrom = nil, nil
	t.cur = r
	t.keys = append(t.keys, r.key)
	t.add(e)
}

// cutInjected removes and returns the entries extensions wrote at the end
// of the run, after its last message, once the next prompt had been
// created (at created, if known): they were written for that prompt.
func (r *runBuf) cutInjected(created time.Time) []*entry {
	if created.IsZero() {
		return nil
	}
	i := len(r.entries)
	for i > 1 && injected(r.entries[i-1]) && !r.entries[i-1].persist.Before(created) {
		i--
	}
	if i == len(r.entries) {
		return nil
	}
	moved := append([]*entry(nil), r.entries[i:]...)
	r.entries = r.entries[:i]
	r.end = r.entries[i-1].end
	return moved
}

// final reports whether the run's last message is a final answer: an
// assistant message that asked for no tool.
func (r *runBuf) final() bool {
	edited := false
	for i := len(r.entries) - 1; i >= 0; i-- {
		e := r.entries[i]
		if e.msg == nil {
			edited = edited || e.Type == typeContextEdit
			continue
		}
		switch e.msg.Role {
		case "assistant":
			if e.msg.StopReason == "error" && edited {
				return false // Pi hid the failed attempt to retry it
			}
			return len(e.msg.callIDs) == 0 || e.msg.StopReason == "aborted"
		case "user", "toolResult", "custom", "bashExecution":
			return false
		}
	}
	return false
}

// Run is a run the FileMapper completed, or an entry traced on its own
// (a ! command, a compaction with no run open), as Config.Runs gets it.
type Run struct {
	// Session is the header's session id. Key is the session and the id
	// of the run's first entry (or of the lone entry), which its ids
	// derive from; Start is when it began. Both identify the run: ids
	// change when Pi migrates an old file, times do not.
	Session, Key string
	Start        time.Time
	// Off is the offset its first entry starts at.
	Off int64

	t       *FileMapper
	r       *runBuf // a run, or
	e       *entry  // an entry on its own
	settled bool
	end     agentmap.Ending
	traced  bool
}

// Trace traces the run, if it was not yet; retraced marks it traced again
// after a failed export (pi.retraced on its spans: the span metrics and
// the report leave it out). It is called, if at all, before Config.Runs
// returns.
func (r *Run) Trace(retraced bool) {
	if r.traced {
		return
	}
	r.traced = true
	t := r.t
	switch {
	case r.e != nil && r.e.Type == typeCompaction:
		x := &translator{t: t, now: r.e.persist, key: r.Key, uncounted: retraced}
		x.compaction(r.e)
	case r.e != nil:
		t.bashSpan(spanid.WithKey(t.cfg.Parent, r.Key, spanid.Path{}), r.e, true, retraced)
	case t.lookUpParent() && t.cfg.NestedOnce:
		t.stats.Nested++
		return
	default:
		t.stats.Runs++
		t.translate(r.r, r.settled, r.end, retraced)
		return
	}
	// Entries still pending belong to a later run, which ends after
	// this: a restart re-reads them from the start anyway.
	t.committed = max(t.committed, r.e.end)
}

// hand gives run to Config.Runs, or traces it, and reports whether it was
// traced.
func (t *FileMapper) hand(run *Run) bool {
	if t.cfg.Runs == nil {
		run.Trace(false)
	} else {
		t.cfg.Runs(run)
	}
	return run.traced
}
