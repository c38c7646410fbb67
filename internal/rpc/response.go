package rpc

import (
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// response ends the span of the command r answers.
func (t *Tracker) response(r *wireResponse, at time.Time) {
	c := t.pending.peek(r.key())
	d := r.data()
	if c == nil {
		t.stats.UnmatchedResponses++
		var name string
		_ = json.Unmarshal(r.Command, &name)
		t.learnSession(name, r.Success, d)
		t.learnEndpoint(name, r.Success, d)
		return
	}
	t.pending.remove(c)
	t.stats.Responses++
	if c.deferred {
		t.openDeferred(c)
	}
	attrs := []attribute.KeyValue{vocab.RPCSuccessKey.Bool(r.Success)}
	if !r.Success {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(c, r.Error)))
		c.span.SetStatus(codes.Error, t.errorText(c, r.Error))
	}
	switch c.name {
	case "prompt", "steer", "follow_up":
		if d.Disposition != "" {
			attrs = append(attrs, vocab.RPCDispositionKey.String(d.Disposition))
		}
		if r.Success && d.Disposition == string(vocab.DispositionQueued) {
			t.queued(c, at)
		}
	case "bash":
		attrs = append(attrs, bashCounts(c)...)
		if d.ExitCode != nil {
			attrs = append(attrs, vocab.BashExitCodeKey.Int(*d.ExitCode))
		}
		if r.Success {
			attrs = append(attrs, vocab.BashCancelledKey.Bool(d.Cancelled != nil && *d.Cancelled))
		}
		if d.Truncated != nil {
			attrs = append(attrs, vocab.BashTruncatedKey.Bool(*d.Truncated))
		}
	case "new_session", "switch_session", "fork", "clone":
		if d.Cancelled != nil {
			attrs = append(attrs, vocab.RPCCancelledKey.Bool(*d.Cancelled))
		}
	}
	if t.learnSession(c.name, r.Success, d) {
		attrs = append(attrs, semconv.GenAIConversationID(d.SessionID))
	}
	t.learnEndpoint(c.name, r.Success, d)
	c.span.SetAttributes(attrs...)
	c.span.End(trace.WithTimestamp(at))
}

func bashCounts(c *command) []attribute.KeyValue {
	return []attribute.KeyValue{
		vocab.BashChunksKey.Int64(c.chunks),
		vocab.BashBytesKey.Int64(c.bytes),
	}
}

// learnSession keeps the mapper's session id current from what the
// controller itself asked: get_state and get_session_stats carry it, and
// a session switch makes it stale until the controller asks again. It
// reports whether it learnt a new id.
func (t *Tracker) learnSession(command string, success bool, d responseData) bool {
	if !success {
		return false
	}
	switch command {
	case "get_state", "get_session_stats":
		if d.SessionID != "" && d.SessionID != t.m.SessionID() {
			t.m.SetSessionID(d.SessionID)
			// The spans still open learn it too, as the mapper's do.
			conv := semconv.GenAIConversationID(d.SessionID)
			for _, c := range t.pending.all() {
				if c.span != nil {
					c.span.SetAttributes(conv)
				}
			}
			for _, x := range t.dialogs.all() {
				x.span.SetAttributes(conv)
			}
			return true
		}
	case "new_session", "switch_session", "fork", "clone":
		if d.Cancelled == nil || !*d.Cancelled {
			t.m.SetSessionID("")
		}
	}
	return false
}

// learnEndpoint hands the mapper the endpoint of the model a response
// describes: the one record of Pi's that names the server its model calls
// go to (server.address on their spans).
func (t *Tracker) learnEndpoint(command string, success bool, d responseData) {
	if !success {
		return
	}
	var md *modelData
	switch command {
	case "get_state", "cycle_model":
		md = d.Model
	case "set_model":
		md = &d.modelData
	}
	if md != nil && md.ID != "" && md.Provider != "" {
		t.m.LearnEndpoint(md.Provider, md.ID, md.BaseURL)
	}
}

// queued marks a message Pi queued into the open run: its turns land in
// that run's root, and the event says where they came from.
func (t *Tracker) queued(c *command, at time.Time) {
	if !t.m.Active() {
		return
	}
	kind := c.name
	if c.name == "prompt" {
		kind = string(vocab.QueueSteer)
		if c.streaming == "followUp" {
			kind = string(vocab.QueueFollowUp)
		}
	}
	attrs := []attribute.KeyValue{
		vocab.RPCCommandKey.String(c.name),
		vocab.QueueKindKey.String(kind),
	}
	if c.id != "" {
		attrs = append(attrs, vocab.RPCIDKey.String(c.id))
	}
	trace.SpanFromContext(t.m.RootContext()).AddEvent(vocab.EventRPCQueued,
		trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

// bashUpdate counts the output of a direct bash command; the output
// itself is content and is not kept.
func (t *Tracker) bashUpdate(rec []byte) {
	var u struct {
		ID    json.RawMessage `json:"id"`
		Delta string          `json:"delta"`
	}
	if json.Unmarshal(rec, &u) != nil {
		return
	}
	c := t.pending.peek(key{id: jsonKey(u.ID), typ: "s:bash"})
	if c == nil {
		return
	}
	c.chunks++
	c.bytes += int64(len(u.Delta))
}

// extensionError records an extension_error on the innermost open span: the
// run's, else the command being handled (an extension command, a session
// switch), else nowhere but the counters.
func (t *Tracker) extensionError(rec []byte, at time.Time) {
	t.stats.ExtensionErrors++
	ev, _ := event.Decode(rec, t.decode)
	if !t.m.Active() {
		if c := t.pending.latestOpen(); c != nil {
			attrs := []attribute.KeyValue{
				vocab.ExtensionPathKey.String(ev.ExtensionPath),
				vocab.ExtensionEventKey.String(vocab.Clip(ev.Event, vocab.MaxNameDetail)),
			}
			if s := t.cfg.content; s != nil {
				attrs = append(attrs, vocab.ExtensionErrorKey.String(s.Scrub(ev.Error)))
			}
			c.span.AddEvent(vocab.EventExtensionError, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
			return
		}
	}
	t.m.ExtensionError(&ev, at)
}
