package agentmap

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Bounds on captured content (docs/span-model.md, Content). A call's input
// is the whole conversation so far, which grows with every call: without a
// bound a long session would send its history again on each chat span.
const (
	// maxSpanInputBytes bounds gen_ai.input.messages on one span. The newest
	// message is kept even when it alone is larger (it is itself bounded by
	// the content's whole-value limit).
	maxSpanInputBytes = 64 << 10
	// maxRunInputBytes bounds what one run's chat spans say they were sent
	// (input messages and system instructions) together, and
	// maxRunOutputBytes what they answered: past either a chat carries no
	// more of it (pi.content.over_budget). Answers are short and what a
	// reader wants most, so they have a budget of their own.
	maxRunInputBytes  = 2 << 20
	maxRunOutputBytes = 512 << 10
)

// msgQueue holds rendered messages (one JSON object each), oldest first,
// never more than maxSpanInputBytes of them besides the newest: what no
// span can show is dropped at once, and counted.
type msgQueue struct {
	msgs    []string
	head    int // msgs[:head] are dropped
	bytes   int // of msgs[head:]
	dropped int // messages dropped since the last reset
}

func (q *msgQueue) add(obj string) {
	q.msgs = append(q.msgs, obj)
	q.bytes += len(obj)
	for q.bytes > maxSpanInputBytes && len(q.msgs)-q.head > 1 {
		q.bytes -= len(q.msgs[q.head])
		q.msgs[q.head] = ""
		q.head++
		q.dropped++
	}
	if q.head > 64 && q.head > len(q.msgs)/2 {
		q.msgs = append(q.msgs[:0], q.msgs[q.head:]...)
		q.head = 0
	}
}

func (q *msgQueue) reset() { *q = msgQueue{} }

// render joins the newest messages that fit in limit bytes into a JSON
// array, and says how many older ones it left out. With whole set the
// newest message is kept even when it alone is over limit.
func (q *msgQueue) render(limit int, whole bool) (string, int) {
	held := q.msgs[q.head:]
	from, size := len(held), 2
	for from > 0 {
		n := len(held[from-1]) + 1
		if size+n > limit && (from < len(held) || !whole) {
			break
		}
		size += n
		from--
	}
	if from == len(held) {
		return "", q.dropped + len(held)
	}
	return "[" + strings.Join(held[from:], ",") + "]", q.dropped + from
}

// contentState is the captured content that outlives a call: the
// conversation the next call sends, and the system prompt as it stands
// (the declared tools are in conventionState). Only used with
// --capture-content.
type contentState struct {
	history  msgQueue
	system   systemPrompt
	rendered string // gen_ai.system_instructions of the current prompt
}

// runContent is what the root of a run shows: its input (the user
// messages that started and steered it) and its output (the last answer),
// and the content bytes its spans carry.
type runContent struct {
	input  msgQueue
	output string
	// bytes is all the content the run's spans carry; in and out are the
	// chats' inputs and outputs, each within its budget.
	bytes, in, out int
}

type toolDef struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// systemPrompt is Pi's system message as it stands: a later system message
// changes named sections (null removes one).
type systemPrompt struct {
	content  json.RawMessage
	sections []namedSection
}

type namedSection struct {
	name string
	text json.RawMessage
}

// sentToModel are the roles of the messages Pi sends the model besides its
// own answers (genaimsg maps each); a role this version does not know is
// not assumed to be sent.
func sentToModel(role string) bool {
	switch role {
	case "user", "toolResult", "bashExecution", "custom", "branchSummary", "compactionSummary":
		return true
	}
	return false
}

// messageObject renders one Pi message as one gen_ai.input.messages entry,
// or "" when it is not sent to the model or does not render.
func (m *Mapper) messageObject(raw []byte) string {
	s := m.cfg.content.InputMessages([][]byte{raw})
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return ""
	}
	return s[1 : len(s)-1]
}

// contentMessage records a user, tool result or other non-assistant message
// as part of what the next call sends; a user message is the run's input too.
func (m *Mapper) contentMessage(msg *event.Message, raw []byte) {
	if m.cfg.content == nil || len(raw) == 0 || !sentToModel(msg.Role) {
		return
	}
	obj := m.messageObject(raw)
	if obj == "" {
		return
	}
	m.text.history.add(obj)
	if msg.Role == "user" && m.run != nil {
		m.run.content.input.add(obj)
	}
}

// systemContent applies a system message to the prompt the next calls are
// sent (the tools it declares are in m.conv); raw is the message as Pi
// sent it, absent when content was not kept.
func (m *Mapper) systemContent(msg *event.Message, raw []byte) {
	c := m.cfg.content
	if c == nil || len(raw) == 0 {
		return
	}
	p := &m.text.system
	if len(msg.Content) > 0 && string(msg.Content) != `""` && string(msg.Content) != "null" {
		p.content = bytes.Clone(msg.Content) // the decoder's may point into the record
	}
	p.apply(msg.Ordered)
	m.text.rendered = c.SystemInstructions(p.message())
}

// apply merges a message's sections into the prompt, in their order.
func (p *systemPrompt) apply(sections []event.Section) {
	for _, s := range sections {
		i := slices.IndexFunc(p.sections, func(n namedSection) bool { return n.name == s.Name })
		switch {
		case string(s.Text) == "null" && i >= 0:
			p.sections = slices.Delete(p.sections, i, i+1)
		case string(s.Text) == "null":
		case i >= 0:
			p.sections[i].text = s.Text
		default:
			p.sections = append(p.sections, namedSection{name: s.Name, text: s.Text})
		}
	}
}

// message is the prompt as one Pi system message.
func (p *systemPrompt) message() []byte {
	var b bytes.Buffer
	b.WriteString(`{"role":"system","content":`)
	if len(p.content) > 0 {
		b.Write(p.content)
	} else {
		b.WriteString(`""`)
	}
	b.WriteString(`,"sections":{`)
	for i, s := range p.sections {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(s.name)
		b.Write(name)
		b.WriteByte(':')
		b.Write(s.text)
	}
	b.WriteString("}}")
	return b.Bytes()
}

// chatInputAttrs adds what a call is sent: the conversation so far, newest
// kept, and the system instructions, within the run's budget.
func (m *Mapper) chatInputAttrs(r *run, attrs []attribute.KeyValue) []attribute.KeyValue {
	if m.cfg.content == nil {
		return attrs
	}
	// Within the run's budget strictly; a span's own bound lets the newest
	// message through whole.
	left := maxRunInputBytes - r.content.in
	in, omitted := m.text.history.render(min(maxSpanInputBytes, left), left > maxSpanInputBytes)
	if in != "" {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(in))
		r.content.in += len(in)
		r.content.bytes += len(in)
	}
	if omitted > 0 {
		attrs = append(attrs, vocab.ContentOmittedMessagesKey.Int(omitted))
	}
	if in == "" && omitted > 0 {
		attrs = append(attrs, vocab.ContentOverBudgetKey.Bool(true))
	}
	return budgeted(r, &r.content.in, maxRunInputBytes, attrs, semconv.GenAISystemInstructionsKey, m.text.rendered)
}

// budgeted appends key=v when the budget that spent counts against has room
// for it, else marks the span over budget.
func budgeted(r *run, spent *int, budget int, attrs []attribute.KeyValue, key attribute.Key, v string) []attribute.KeyValue {
	switch {
	case v == "":
	case *spent+len(v) > budget:
		attrs = append(attrs, vocab.ContentOverBudgetKey.Bool(true))
	default:
		*spent += len(v)
		r.content.bytes += len(v)
		attrs = append(attrs, key.String(v))
	}
	return attrs
}

// chatOutputAttrs adds what a call answered, and keeps the answer as the
// run's output and as part of what the next call is sent. A failed call's
// message is not: Pi sends the context again without it.
func (m *Mapper) chatOutputAttrs(r *run, msg *event.Message, attrs []attribute.KeyValue) []attribute.KeyValue {
	c := m.cfg.content
	if c == nil {
		return attrs
	}
	raw := assistantRaw(msg)
	out := c.OutputMessages([][]byte{raw})
	r.content.output = out
	if msg.StopReason != "error" {
		if obj := m.messageObject(raw); obj != "" {
			m.text.history.add(obj)
		}
	}
	return budgeted(r, &r.content.out, maxRunOutputBytes, attrs, semconv.GenAIOutputMessagesKey, out)
}

// rootContentAttrs gives the root the run's input and output, so that a
// trace list shows request and response, and the tools the agent had.
func (m *Mapper) rootContentAttrs(r *run, attrs []attribute.KeyValue) []attribute.KeyValue {
	c := m.cfg.content
	if c == nil {
		return attrs
	}
	if in, omitted := r.content.input.render(maxSpanInputBytes, true); in != "" {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(in))
		r.content.bytes += len(in)
		if omitted > 0 {
			attrs = append(attrs, vocab.ContentOmittedMessagesKey.Int(omitted))
		}
	}
	if r.content.output != "" {
		attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(r.content.output))
		r.content.bytes += len(r.content.output)
	}
	if len(m.conv.tools) > 0 {
		// Names and descriptions only: the conventions advise against the
		// optional fields (the parameter schemas) by default, for size.
		defs := make([]toolDef, len(m.conv.tools))
		for i, name := range m.conv.tools {
			defs[i] = toolDef{Type: "function", Name: c.Scrub(name), Description: c.Scrub(m.conv.descriptions[name])}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // code and shell text read as written
		if enc.Encode(defs) == nil {
			v := strings.TrimSuffix(b.String(), "\n")
			attrs = append(attrs, semconv.GenAIToolDefinitionsKey.String(v))
			r.content.bytes += len(v)
		}
	}
	return append(attrs, vocab.ContentBytesKey.Int(r.content.bytes))
}

// compactedContent replaces the conversation after a compaction: Pi sends
// the summary in place of what it summarised. Which recent messages Pi
// kept is not in the stream; the current run's since its last user
// message are kept, the turn Pi does not cut.
func (m *Mapper) compactedContent(summary string) {
	if m.cfg.content == nil {
		return
	}
	raw, _ := json.Marshal(struct {
		Role    string `json:"role"`
		Summary string `json:"summary"`
	}{"compactionSummary", summary})
	kept := m.text.history.msgs[m.text.history.head:]
	from := len(kept)
	for from > 0 && !strings.HasPrefix(kept[from-1], `{"role":"user"`) {
		from--
	}
	if from > 0 && m.run != nil {
		from-- // the user message itself
	} else {
		from = len(kept)
	}
	tail := append([]string(nil), kept[from:]...)
	m.text.history.reset()
	if obj := m.messageObject(raw); obj != "" {
		m.text.history.add(obj)
	}
	for _, s := range tail {
		m.text.history.add(s)
	}
}

// summaryOutput renders a compaction's summary as its call's output.
func (m *Mapper) summaryOutput(summary string) string {
	raw, _ := json.Marshal(struct {
		Role       string `json:"role"`
		Content    string `json:"content"`
		StopReason string `json:"stopReason"`
	}{"assistant", summary, "stop"})
	return m.cfg.content.OutputMessages([][]byte{raw})
}
