package agentmap

import (
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
		r.chat.SetAttributes(vocab.UnfinishedKey.Bool(true))
		r.chat.finish(at)
	}
	name := vocab.SpanChat.Name(msg.Model)
	// Pi streams every call (message_update carries the chunks).
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIRequestStream(true)}
	if msg.Provider != "" {
		attrs = append(attrs, providerAttrs(msg.Provider)...)
	}
	if msg.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(msg.Model))
	}
	attrs = m.endpointAttrs(msg.Provider, msg.Model, attrs)
	attrs = append(attrs, r.skills.current()...)
	attrs = m.chatInputAttrs(r, attrs)
	s := m.start(r.container().ctx, spanid.Path{Kind: "chat", N: r.chats}, name, trace.SpanKindClient, at, attrs...)
	r.chats++
	r.chat = &chat{span: s, model: msg.Model}
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
		attrs := []attribute.KeyValue{vocab.MessageCharsKey.Int(msg.TextChars)}
		if c := m.cfg.content; c != nil {
			attrs = append(attrs, semconv.GenAIInputMessagesKey.String(c.InputMessages([][]byte{rawMessage(ev)})))
		}
		m.currentEvent(vocab.EventUserMessage, at, attrs...)
		m.contentMessage(msg, rawMessage(ev))
	case "system":
		attrs := []attribute.KeyValue{
			vocab.SystemSectionsKey.StringSlice(sectionNames(msg.Sections)),
			vocab.SystemToolCountKey.Int(len(msg.ToolsAdded) + len(msg.Tools)),
		}
		// The instructions themselves go on the chat spans they were sent
		// with (content.go): one place.
		m.rootEvent(vocab.EventSystemMessage, at, attrs...)
		m.conv.learnTools(msg)
		m.systemContent(msg, rawMessage(ev))
	default: // toolResult, bashExecution, custom, …: sent with the next call
		m.contentMessage(msg, rawMessage(ev))
	}
}

func (m *Mapper) assistantEnd(msg *event.Message, at time.Time) {
	r := m.ensureRun(at, "message_end")
	if r.chat == nil {
		m.anomaly("assistant message_end without message_start")
		m.messageStart(&event.Event{Type: event.TypeMessageStart, Message: msg}, at)
	}
	c := r.chat
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
		attrs = append(attrs, usageAttrs(u)...)
		attrs = append(attrs, vocab.CostTotalKey.Float64(u.Cost.Total))
		r.usage.Add(u)
	}
	attrs = m.conv.chatAttrs(msg, attrs)
	attrs = m.chatOutputAttrs(r, msg, attrs)
	c.SetAttributes(attrs...)
	if msg.StopReason == "error" {
		c.SetAttributes(semconv.ErrorTypeKey.String(errtext.Class(msg.ErrorMessage)))
		c.SetStatus(codes.Error, m.errorText(msg.ErrorMessage))
	}
	if msg.Provider != "" {
		r.provider = msg.Provider
	}
	if msg.Model != "" {
		r.model = msg.Model
	}
	r.genai.called(msg)
	r.lastStop = msg.StopReason
	r.lastError = ""
	if msg.StopReason == "error" {
		r.lastError = m.errorText(msg.ErrorMessage)
	}
	if msg.StopReason == "error" && r.turn != nil {
		r.turn.SetStatus(codes.Error, r.lastError)
	}
	c.finish(at)
	r.chat = nil
}

func usageAttrs(u *event.Usage) []attribute.KeyValue {
	return appendUsageAttrs(make([]attribute.KeyValue, 0, 5), u)
}

// appendUsageAttrs appends usageAttrs(u) to attrs.
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

// providerAttrs names a provider both ways: by the conventions' well-known
// name, which backends group by, and by Pi's own id.
func providerAttrs(id string) []attribute.KeyValue {
	return appendProviderAttrs(make([]attribute.KeyValue, 0, 2), id)
}

// appendProviderAttrs appends providerAttrs(id) to attrs.
func appendProviderAttrs(attrs []attribute.KeyValue, id string) []attribute.KeyValue {
	return append(attrs, semconv.GenAIProviderNameKey.String(vocab.ProviderName(id)), vocab.ProviderKey.String(id))
}

// errorText is what a span may say about a provider error: see errtext.
func (m *Mapper) errorText(msg string) string {
	if msg == "" {
		return ""
	}
	var s errtext.Scrubber
	if m.cfg.content != nil {
		s = m.cfg.content
	}
	return errtext.Text(msg, s, "")
}
