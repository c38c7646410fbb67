package nested

import (
	"cmp"
	"encoding/json"
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
)

// message is the part of a child's Pi message read.
type message struct {
	Role          string       `json:"role"`
	Content       blocks       `json:"content"`
	Provider      string       `json:"provider"`
	Model         string       `json:"model"`
	ResponseModel string       `json:"responseModel"`
	Usage         *event.Usage `json:"usage"`
	StopReason    string       `json:"stopReason"`
	ErrorMessage  string       `json:"errorMessage"`
	DurationMs    *float64     `json:"durationMs"`
	Timestamp     float64      `json:"timestamp"`
	ToolCallID    string       `json:"toolCallId"`
	ToolName      string       `json:"toolName"`
	IsError       bool         `json:"isError"`
}

type block struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// blocks are a message's content blocks, of which only the tool calls'
// ids and names are kept: a text is skipped, not copied, however large. A
// content that is not a list (a user's string) is no block.
type blocks []block

// messages turns a child's messages into timed items: a chat starts at its
// assistant message's timestamp and lasts durationMs; a tool ends at its
// result's timestamp and lasts durationMs, else starts when the model call
// that asked for it ended.
func (p *parser) messages(run *Run, msgs []json.RawMessage, depth int) {
	var prev, lastChatEnd time.Time
	var lastStop, lastErr string
	names := map[string]string{} // tool call id → name, from the assistant's calls
	var results event.Results    // for repeats, read as the top level reads them
	defer func() {
		// The entry says how the child stopped; else its last model call.
		run.StopReason = cmp.Or(run.StopReason, lastStop)
		if run.ErrorMessage == "" && run.StopReason == "error" {
			run.ErrorMessage = lastErr
		}
	}()
	for i, raw := range msgs {
		var m message
		if malformed, skip := p.dec.message(raw, &m); malformed {
			p.dropped.Malformed++
			if skip {
				continue // not a message
			}
			// One field lost, the message kept.
		}
		if m.Role != "assistant" && m.Role != "toolResult" && m.Role != "user" {
			p.dropped.UnknownRoles++
			continue
		}
		// A result for a call that has one already, and that no model
		// call asked for again since, is that result given again (a
		// child's messages collected twice, its last result repeated
		// after its final answer), as the top level reads a session's
		// own (internal/session).
		switch m.Role {
		case "assistant":
			for _, b := range m.Content {
				if b.Type == "toolCall" {
					results.Ask(b.ID)
				}
			}
		case "toolResult":
			if results.Answer(m.ToolCallID) {
				// One execution, one span: the copy adds nothing, not
				// even its time to the run's.
				p.dropped.Repeated++
				continue
			}
		}
		ts := msTime(m.Timestamp)
		if !ts.IsZero() {
			if !prev.IsZero() && ts.Before(prev) {
				p.dropped.Unordered++
			}
			prev = ts
			run.cover(ts)
		}
		if m.Role == "user" {
			continue
		}
		if len(run.Items) >= p.lim.MaxItems {
			p.dropped.Items += p.countItems(msgs[i:])
			return
		}
		switch m.Role {
		case "assistant":
			it := Item{Kind: Chat, Start: ts, End: ts, DurationMs: m.DurationMs, Model: m.Model, Provider: m.Provider,
				ResponseModel: m.ResponseModel, StopReason: m.StopReason, ErrorMessage: m.ErrorMessage, Usage: m.Usage}
			if m.DurationMs != nil && *m.DurationMs > 0 && !ts.IsZero() {
				it.End = ts.Add(Millis(*m.DurationMs))
			}
			run.cover(it.End)
			for _, b := range m.Content {
				if b.Type == "toolCall" {
					it.ToolCalls++
					names[b.ID] = b.Name
				}
			}
			if m.Usage != nil {
				run.Usage.Add(m.Usage)
			}
			if m.Model != "" {
				run.Model, run.Provider = m.Model, m.Provider
			}
			if m.StopReason != "" {
				lastStop, lastErr = m.StopReason, m.ErrorMessage
			}
			lastChatEnd = it.End
			run.Items = append(run.Items, it)
		case "toolResult":
			it := Item{Kind: Tool, End: ts, DurationMs: m.DurationMs, ToolName: cmp.Or(m.ToolName, names[m.ToolCallID]),
				ToolCallID: m.ToolCallID, IsError: m.IsError}
			it.Start = lastChatEnd
			if m.DurationMs != nil && *m.DurationMs >= 0 && !ts.IsZero() {
				it.Start = ts.Add(-Millis(*m.DurationMs))
			}
			if it.Start.IsZero() || it.End.Before(it.Start) {
				it.Start = it.End
			}
			run.cover(it.Start)
			if Probe(raw) {
				it.Nested = p.result(raw, depth)
			}
			run.Items = append(run.Items, it)
		}
	}
}

func (p *parser) countItems(msgs []json.RawMessage) int {
	n := 0
	for _, raw := range msgs {
		if r := p.dec.role(raw); r == "assistant" || r == "toolResult" {
			n++
		}
	}
	return n
}

// cover widens the run's interval to t.
func (r *Run) cover(t time.Time) {
	if t.IsZero() {
		return
	}
	if r.Start.IsZero() || t.Before(r.Start) {
		r.Start = t
	}
	if t.After(r.End) {
		r.End = t
	}
}
