package agentmap

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/content/genaimsg"
	"github.com/pi-otel/pi-otel/internal/errtext"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

func (m *Mapper) messageStart(ev *event.Event, at time.Time) {
	msg := ev.Message
	if msg == nil || msg.Role != "assistant" {
		return // user and system messages are recorded once, at message_end
	}
	r := m.ensureRun(at, "message_start")
	if r.chat != nil {
		m.anomaly("message_start inside a message")
		if r.chat.rec {
			r.chat.SetAttributes(vocab.UnfinishedKey.Bool(true))
		}
		r.chat.finish(at)
	}
	name := m.spanName(vocab.SpanChat, msg.Model)
	// Pi streams every call (message_update carries the chunks).
	var buf [12]attribute.KeyValue // start copies them
	attrs := append(buf[:0], semconv.GenAIOperationNameChat, semconv.GenAIRequestStream(true))
	if msg.Provider != "" {
		attrs = appendProviderAttrs(attrs, msg.Provider)
	}
	if msg.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(msg.Model))
	}
	attrs = m.endpointAttrs(msg.Provider, msg.Model, attrs)
	attrs = append(attrs, r.skills.current()...)
	attrs = m.chatInputAttrs(r, attrs)
	path := spanid.Path{Kind: "chat", N: r.chats}
	c := &chat{model: msg.Model}
	if r.live && r.derived && firstChunkCame(msg) {
		m.lateStart(&c.span, r, path, name, at, attrs)
	} else {
		m.start(&c.span, r.container().ctx, path, name, trace.SpanKindClient, at, attrs...)
	}
	r.chats++
	r.chat = c
	if msg.Provider != "" {
		r.chat.provider = vocab.ProviderName(msg.Provider)
	}
}

func (m *Mapper) messageUpdate(ev *event.Event, at time.Time) {
	if len(ev.RawMessage) > 0 && !m.settledSeen {
		// Pi before 1.x sends cumulative snapshots with each update.
		m.legacy = true
	}
	r := m.run
	if r == nil || r.chat == nil || ev.AssistantMessageEvent == nil || m.cfg.inexact {
		return
	}
	c := r.chat
	switch ev.AssistantMessageEvent.Type {
	case "text_delta", "thinking_delta", "toolcall_delta":
		// The chunks that carry output; a block's start and end come
		// with them, often in the same read, and would add gaps of ~0.
		// A wall clock stepped back gives no gap rather than a negative one.
		if gap := at.Sub(c.lastDelta); !c.lastDelta.IsZero() && gap >= 0 && m.cfg.chunks != nil {
			m.cfg.chunks.OutputChunk(c.ctx, gap, c.provider, c.model)
		}
		c.lastDelta = at
	case "text_start", "thinking_start", "toolcall_start":
	default:
		return
	}
	if !c.firstChunk {
		c.firstChunk = true
		if !c.rec {
			return
		}
		c.SetAttributes(semconv.GenAIResponseTimeToFirstChunk(at.Sub(c.start).Seconds()))
	}
}

func (m *Mapper) messageEnd(ev *event.Event, at time.Time) {
	msg := ev.Message
	if msg == nil {
		return
	}
	switch msg.Role {
	case "assistant":
		m.assistantEnd(msg, at)
	case "user":
		if m.run != nil {
			m.run.skills.load(msg.Skill)
		}
		// The event keeps the prompt too: the pi.user_prompt log record,
		// an audit trail of what was asked, is made from it.
		if s := m.eventSpan(vocab.EventUserMessage, false); s != nil {
			attrs := []attribute.KeyValue{vocab.MessageCharsKey.Int(msg.TextChars)}
			if c := m.cfg.content; c != nil {
				attrs = append(attrs, semconv.GenAIInputMessagesKey.String(c.InputMessages([][]byte{ev.RawMessage})))
			}
			s.AddEvent(vocab.EventUserMessage, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
		}
		m.contentMessage(msg, ev.RawMessage)
	case "system":
		attrs := []attribute.KeyValue{
			vocab.SystemSectionsKey.StringSlice(slices.Sorted(maps.Keys(msg.Sections))),
			vocab.SystemToolCountKey.Int(len(msg.ToolsAdded) + len(msg.Tools)),
		}
		// The instructions themselves go on the chat spans they were sent
		// with (content.go): one place.
		m.rootEvent(vocab.EventSystemMessage, at, attrs...)
		m.conv.learnTools(msg)
		m.systemContent(msg, ev.RawMessage)
	default: // toolResult, bashExecution, custom, …: sent with the next call
		m.contentMessage(msg, ev.RawMessage)
	}
}

func (m *Mapper) assistantEnd(msg *event.Message, at time.Time) {
	r := m.ensureRun(at, "message_end")
	if r.chat == nil {
		m.anomaly("assistant message_end without message_start")
		m.messageStart(&event.Event{Type: event.TypeMessageStart, Message: msg}, at)
	}
	c := r.chat
	if u := msg.Usage; u != nil {
		r.usage.Add(u)
	}
	m.conv.called(msg)
	// The call's outcome, built only for a span that records it; content
	// capture keeps its run's budget either way.
	var attrs []attribute.KeyValue
	if c.rec {
		attrs = m.conv.chatAttrs(msg, chatEndAttrs(msg))
	}
	attrs = m.chatOutputAttrs(r, msg, attrs)
	r.lastStop = msg.StopReason
	r.lastError = ""
	if msg.StopReason == "error" {
		r.lastError = m.errorText(msg.ErrorMessage)
	}
	if c.rec {
		c.SetAttributes(attrs...)
		if msg.StopReason == "error" {
			c.SetAttributes(semconv.ErrorTypeKey.String(errtext.Class(msg.ErrorMessage)))
			c.SetStatus(codes.Error, r.lastError)
		}
	}
	if msg.Provider != "" {
		r.provider = msg.Provider
	}
	if msg.Model != "" {
		r.model = msg.Model
	}
	r.genai.called(msg)
	if msg.StopReason == "error" && r.turn != nil && r.turn.rec {
		r.turn.SetStatus(codes.Error, r.lastError)
	}
	if l, ok := c.Span.(*lateSpan); ok && msg.Duration != nil && msg.DurationMs == nil && *msg.Duration >= 0 {
		// oh-my-pi's call lasted its duration up to here, as its session
		// file says (event.Message.CallTime); not before the span it
		// hangs from.
		c.start = at.Add(-time.Duration(*msg.Duration * float64(time.Millisecond)))
		if c.start.Before(l.parentStart) {
			c.start = l.parentStart
		}
		if c.start.After(at) {
			c.start = at
		}
	}
	c.finish(at)
	r.chat = nil
}

// chatEndAttrs are the attributes a model call's end gives its span.
func chatEndAttrs(msg *event.Message) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		// The convention's names (tool_call, not toolUse); Pi's own stays
		// in pi.stop_reason.
		semconv.GenAIResponseFinishReasons(genaimsg.FinishReason(msg.StopReason)),
		vocab.StopReasonKey.String(msg.StopReason),
	}
	if msg.ResponseModel != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(msg.ResponseModel))
	} else if msg.Model != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(msg.Model))
	}
	if msg.ResponseID != "" {
		attrs = append(attrs, semconv.GenAIResponseID(msg.ResponseID))
	}
	if msg.RawStopReason != "" {
		attrs = append(attrs, vocab.RawStopReasonKey.String(msg.RawStopReason))
	}
	if msg.DurationMs != nil {
		attrs = append(attrs, vocab.DurationMsKey.Float64(*msg.DurationMs))
	} else if msg.Duration != nil {
		attrs = append(attrs, vocab.DurationMsKey.Float64(*msg.Duration))
	}
	if d, ok := msg.FirstToken(); ok {
		// oh-my-pi measured it from the request; the first chunk's
		// arrival here misses the wait before message_start, which comes
		// with that chunk. Exact in a replay too.
		attrs = append(attrs, semconv.GenAIResponseTimeToFirstChunk(d.Seconds()))
	}
	if u := msg.Usage; u != nil {
		attrs = appendUsageAttrs(attrs, u)
		attrs = append(attrs, vocab.CostTotalKey.Float64(u.Cost.Total))
	}
	return attrs
}

// appendUsageAttrs appends the GenAI token counts of u to attrs.
func appendUsageAttrs(attrs []attribute.KeyValue, u *event.Usage) []attribute.KeyValue {
	attrs = append(attrs,
		semconv.GenAIUsageInputTokens(int(u.Input+u.CacheRead+u.CacheWrite)),
		semconv.GenAIUsageOutputTokens(int(u.Output)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CacheRead)),
		semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWrite)),
	)
	if u.Reasoning > 0 {
		attrs = append(attrs, semconv.GenAIUsageReasoningOutputTokens(int(u.Reasoning)))
	}
	return attrs
}

// appendProviderAttrs names a provider both ways: by the conventions'
// well-known name, which backends group by, and by Pi's own id.
func appendProviderAttrs(attrs []attribute.KeyValue, id string) []attribute.KeyValue {
	return append(attrs, semconv.GenAIProviderNameKey.String(vocab.ProviderName(id)), vocab.ProviderKey.String(id))
}

// errorText is what a span may say about a provider error: see errtext.
func (m *Mapper) errorText(msg string) string {
	if msg == "" {
		return ""
	}
	return errtext.Text(msg, m.cfg.content, "")
}

// firstChunkCame reports whether an assistant message_start already holds
// output: oh-my-pi sends it with the call's first chunk, not when the
// call starts, so when the call began is known only at its end.
func firstChunkCame(msg *event.Message) bool {
	c := bytes.TrimSpace(msg.Content)
	return len(c) > 0 && !bytes.Equal(c, []byte("[]")) && !bytes.Equal(c, []byte("null"))
}

// lateSpan stands in for a chat span whose start is not known yet: it has
// the span context the span will have (its ids derive from the run's key
// and its path), keeps what is done to it in order, and on End starts the
// span at the chat's start as it stands then, replays that, and ends it.
// The span is exported as one started on time would be.
type lateSpan struct {
	trace.Span // non-recording: the span context
	begin      func(at time.Time) trace.Span
	// start is the chat's start (chat.start), which message_end may move.
	start       *time.Time
	parentStart time.Time
	ops         []func(trace.Span)
}

// lateStart opens s, r's chat span at path, as a lateSpan.
func (m *Mapper) lateStart(s *span, r *run, path spanid.Path, name string, at time.Time, attrs []attribute.KeyValue) {
	parent := r.container()
	sc := spanid.SpanContext(trace.SpanContextFromContext(parent.ctx).TraceID(), r.key, path)
	ctx := trace.ContextWithSpanContext(parent.ctx, sc)
	l := &lateSpan{Span: trace.SpanFromContext(ctx), parentStart: parent.start, start: &s.start}
	pctx := parent.ctx
	kept := slices.Clone(attrs) // the caller's buffer
	l.begin = func(at time.Time) trace.Span {
		saved := m.run
		m.run = r // the run whose key names it, whatever run is open now
		started := new(span)
		m.start(started, pctx, path, name, trace.SpanKindClient, at, kept...)
		m.run = saved
		return started.Span
	}
	s.Span, s.ctx, s.start, s.path, s.rec = l, ctx, at, path, true
}

func (l *lateSpan) IsRecording() bool { return true }

func (l *lateSpan) SetAttributes(kv ...attribute.KeyValue) {
	l.ops = append(l.ops, func(s trace.Span) { s.SetAttributes(kv...) })
}

func (l *lateSpan) AddEvent(name string, opts ...trace.EventOption) {
	l.ops = append(l.ops, func(s trace.Span) { s.AddEvent(name, opts...) })
}

func (l *lateSpan) AddLink(link trace.Link) {
	l.ops = append(l.ops, func(s trace.Span) { s.AddLink(link) })
}

func (l *lateSpan) RecordError(err error, opts ...trace.EventOption) {
	l.ops = append(l.ops, func(s trace.Span) { s.RecordError(err, opts...) })
}

func (l *lateSpan) SetStatus(code codes.Code, desc string) {
	l.ops = append(l.ops, func(s trace.Span) { s.SetStatus(code, desc) })
}

func (l *lateSpan) SetName(name string) {
	l.ops = append(l.ops, func(s trace.Span) { s.SetName(name) })
}

func (l *lateSpan) End(opts ...trace.SpanEndOption) {
	if l.begin == nil {
		return // ended already
	}
	s := l.begin(*l.start)
	l.begin = nil
	for _, op := range l.ops {
		op(s)
	}
	l.ops = nil
	s.End(opts...)
}
