package rpc

import (
	"container/list"
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// dialogMethods block in Pi until the controller answers (or a timeout
// passes); every other extension UI method is fire-and-forget.
var dialogMethods = map[string]bool{"select": true, "confirm": true, "input": true, "editor": true}

// dialog is one open extension dialog: the time Pi waits for a human.
type dialog struct {
	id       string
	span     trace.Span
	deadline time.Time // zero without a timeout
	elem     *list.Element
}

// dialogTable holds open dialogs by id, oldest first.
type dialogTable struct {
	byID  map[string]*dialog
	order *list.List
	// next is the earliest deadline, zero when none is set.
	next time.Time
}

func (d *dialogTable) len() int { return d.order.Len() }

func (d *dialogTable) add(x *dialog) {
	d.byID[x.id] = x
	x.elem = d.order.PushBack(x)
	if !x.deadline.IsZero() && (d.next.IsZero() || x.deadline.Before(d.next)) {
		d.next = x.deadline
	}
}

func (d *dialogTable) remove(x *dialog) {
	delete(d.byID, x.id)
	d.order.Remove(x.elem)
}

func (d *dialogTable) all() []*dialog { return listAll[*dialog](d.order) }

// wireUIRequest is the part of an extension_ui_request the tracker reads;
// titles, messages, options and prefills are content and are not read.
type wireUIRequest struct {
	ID         string   `json:"id"`
	Method     string   `json:"method"`
	Timeout    *float64 `json:"timeout"`
	NotifyType string   `json:"notifyType"`
}

func (t *Tracker) uiRequest(rec []byte, at time.Time) {
	var r wireUIRequest
	if json.Unmarshal(rec, &r) != nil {
		return
	}
	method := clip(r.Method, 64)
	if !dialogMethods[r.Method] {
		t.stats.UIEvents++
		target := trace.SpanFromContext(t.uiParent())
		attrs := []attribute.KeyValue{vocab.UIMethodKey.String(method), vocab.UIIDKey.String(clip(r.ID, 128))}
		if r.NotifyType != "" {
			attrs = append(attrs, vocab.UINotifyTypeKey.String(clip(r.NotifyType, 32)))
		}
		target.AddEvent(vocab.EventExtensionUI, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
		return
	}
	t.stats.Dialogs++
	if old := t.dialogs.byID[r.ID]; old != nil {
		// A reused id: the first request can no longer be answered.
		t.dialogs.remove(old)
		t.endDialog(old, vocab.UIUnanswered, at)
	}
	attrs := []attribute.KeyValue{
		vocab.UIIDKey.String(clip(r.ID, 128)),
		vocab.UIMethodKey.String(method),
	}
	x := &dialog{id: r.ID}
	if r.Timeout != nil && *r.Timeout > 0 {
		ms := *r.Timeout
		attrs = append(attrs, vocab.UITimeoutMsKey.Int64(int64(ms)))
		x.deadline = at.Add(time.Duration(ms * float64(time.Millisecond)))
	}
	opts := t.sessionOptions(&attrs)
	opts = append(opts, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	_, x.span = t.tracer.Start(t.uiParent(), vocab.SpanExtensionUI.Name(method), opts...)
	t.dialogs.add(x)
	for t.dialogs.len() > t.cfg.maxDialogs {
		old := t.dialogs.order.Front().Value.(*dialog)
		t.dialogs.remove(old)
		t.stats.DialogsEvicted++
		old.span.SetAttributes(vocab.UnfinishedKey.Bool(true), vocab.EndEvicted.Attr())
		t.endDialog(old, vocab.UIUnanswered, at)
	}
}

// uiParent is where extension UI lands: the innermost span of the open
// run (a turn, when a tool_call handler asks), else the command Pi is
// handling (a prompt in its preflight, an extension command, a session
// switch), else the run's root or, idle, nothing.
func (t *Tracker) uiParent() context.Context {
	if t.m.Active() {
		cur := t.m.CurrentContext()
		root := trace.SpanContextFromContext(t.m.RootContext()).SpanID()
		if trace.SpanContextFromContext(cur).SpanID() != root {
			return cur
		}
	}
	if c := t.pending.latestOpen(); c != nil {
		return c.ctx
	}
	return t.m.RootContext()
}

// wireUIResponse is the controller's answer; the value is content and is
// only checked for presence.
type wireUIResponse struct {
	ID        string          `json:"id"`
	Confirmed *bool           `json:"confirmed"`
	Value     json.RawMessage `json:"value"`
	Cancelled *bool           `json:"cancelled"`
}

func (t *Tracker) uiResponse(rec []byte, at time.Time) {
	var r wireUIResponse
	if json.Unmarshal(rec, &r) != nil {
		t.stats.UnmatchedUI++
		return
	}
	x := t.dialogs.byID[r.ID]
	if x == nil {
		// Late (Pi timed it out already) or unknown: Pi ignores it too.
		t.stats.UnmatchedUI++
		return
	}
	t.dialogs.remove(x)
	// The same precedence Pi applies when it reads the answer.
	switch {
	case r.Cancelled != nil && *r.Cancelled:
		t.endDialog(x, vocab.UICancelled, at)
	case r.Confirmed != nil:
		x.span.SetAttributes(vocab.UIConfirmedKey.Bool(*r.Confirmed))
		t.endDialog(x, vocab.UIConfirmed, at)
	case r.Value != nil:
		t.endDialog(x, vocab.UIValue, at)
	default:
		// Pi resolves an empty answer as a dismissal.
		t.endDialog(x, vocab.UICancelled, at)
	}
}

func (t *Tracker) endDialog(x *dialog, outcome vocab.UIOutcome, at time.Time) {
	x.span.SetAttributes(outcome.Attr())
	x.span.End(trace.WithTimestamp(at))
}

// expire ends the dialogs whose timeout passed before at: Pi resolved
// them itself, without a record, at their deadline.
func (t *Tracker) expire(at time.Time) {
	d := &t.dialogs
	if d.next.IsZero() || at.Before(d.next) {
		return
	}
	d.next = time.Time{}
	for _, x := range d.all() {
		if x.deadline.IsZero() {
			continue
		}
		if !x.deadline.After(at) {
			d.remove(x)
			t.stats.TimedOut++
			t.endDialog(x, vocab.UITimedOut, x.deadline)
			continue
		}
		if d.next.IsZero() || x.deadline.Before(d.next) {
			d.next = x.deadline
		}
	}
}

// clip cuts s to at most n bytes on a rune boundary, marked with an
// ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return vocab.Clip(s, n) + "…"
}
