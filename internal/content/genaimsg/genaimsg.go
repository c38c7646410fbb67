// Package genaimsg converts Pi messages into the JSON that the OpenTelemetry
// GenAI semantic conventions (v1.41) define for the opt-in content attributes
// gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions,
// gen_ai.tool.call.arguments and gen_ai.tool.call.result.
//
// Every string taken from a Pi message goes through a scrub function
// supplied by the caller, normally a redactor: the content (text,
// reasoning, tool arguments, tool output, shell commands, summaries) and
// the names beside it (a tool call's, a prompt section's, an unknown role
// or block type, a stop reason passed through as the finish reason, a MIME
// type), as they are on spans. Ids and this package's own words are not.
// Values under credential-named keys in structured tool arguments are
// replaced outright (see redact.SensitiveKey). A nil scrub leaves content
// unchanged.
//
// Roles map as follows:
//
//	system            → "system"
//	user              → "user"
//	assistant         → "assistant"
//	toolResult        → "tool", one tool_call_response part
//	bashExecution     → "user" (Pi sends it to the model as user text); skipped
//	                    when excludeFromContext is set, since the model never sees it
//	custom            → "user" (likewise)
//	branchSummary     → "user", the summary as text
//	compactionSummary → "user", the summary as text
//
// For the four roles Pi converts to "user", the message's "name" field keeps
// the Pi role. Unknown roles keep their name and the parts of their "content"
// field; unknown content blocks become parts typed by their block type, with
// their "text" field, if any, as content. Neither is an error.
//
// Image data is never captured: an image becomes a part of type "image" with
// its MIME type, modality and approximate size, but no bytes. A "blob" part
// would require the base64 data itself.
package genaimsg

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Part types from the conventions, plus "image" for images whose data is
// left out.
const (
	partText             = "text"
	partReasoning        = "reasoning"
	partToolCall         = "tool_call"
	partToolCallResponse = "tool_call_response"
	partImage            = "image"
)

// message is one entry of gen_ai.input.messages or gen_ai.output.messages.
type message struct {
	Role         string  `json:"role"`
	Parts        []any   `json:"parts"`
	Name         string  `json:"name,omitempty"`
	FinishReason *string `json:"finish_reason,omitempty"`
}

type textPart struct {
	Type    string `json:"type"`
	Content string `json:"content"`
	// Name labels a system prompt section.
	Name string `json:"name,omitempty"`
	// Redacted marks reasoning the provider returned encrypted.
	Redacted bool `json:"redacted,omitempty"`
}

type toolCallPart struct {
	Type      string          `json:"type"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type toolCallResponsePart struct {
	Type     string `json:"type"`
	ID       string `json:"id,omitempty"`
	Response string `json:"response"`
}

type imagePart struct {
	Type     string `json:"type"`
	Modality string `json:"modality"`
	MimeType string `json:"mime_type,omitempty"`
	Size     int    `json:"size,omitempty"` // decoded bytes, estimated from the base64 length
	Note     string `json:"note"`
}

// genericPart stands for a block type this package does not know.
type genericPart struct {
	Type    string `json:"type"`
	Content string `json:"content,omitempty"`
}

// sectionRemovedPart records a system message removing a named prompt section.
type sectionRemovedPart struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

const imageNote = "image data not captured"

// InputMessages converts the messages sent to the model into
// gen_ai.input.messages JSON. It fails only on a message that is not a JSON
// object.
func InputMessages(msgs []json.RawMessage, scrub func(string) string) (string, error) {
	return convert(msgs, scrub, false)
}

// OutputMessages converts the model's assistant messages into
// gen_ai.output.messages JSON, with finish_reason taken from stopReason.
func OutputMessages(msgs []json.RawMessage, scrub func(string) string) (string, error) {
	return convert(msgs, scrub, true)
}

func convert(msgs []json.RawMessage, scrub func(string) string, output bool) (string, error) {
	scrub = orIdentity(scrub)
	out := make([]message, 0, len(msgs))
	for i, raw := range msgs {
		m, err := decodeObject(raw)
		if err != nil {
			return "", fmt.Errorf("genaimsg: message %d: %w", i, err)
		}
		msg, ok := convertMessage(m, scrub)
		if !ok {
			continue
		}
		if output {
			fr := finishReason(field[string](m, "stopReason"), scrub)
			msg.FinishReason = &fr
		}
		out = append(out, msg)
	}
	return encode(out)
}

// SystemInstructions converts a Pi system message into
// gen_ai.system_instructions JSON: an array of text parts, one per content
// block and one per prompt section (named by the part's "name"). A section
// the message removes becomes a "section_removed" part. A bare JSON string is
// accepted as the prompt text.
func SystemInstructions(systemMsg json.RawMessage, scrub func(string) string) (string, error) {
	scrub = orIdentity(scrub)
	trimmed := bytes.TrimSpace(systemMsg)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return "[]", nil
	}
	if trimmed[0] == '"' {
		var s string
		if err := json.Unmarshal(trimmed, &s); err != nil {
			return "", fmt.Errorf("genaimsg: system message: %w", err)
		}
		return encode([]any{textPart{Type: partText, Content: scrub(s)}})
	}
	m, err := decodeObject(systemMsg)
	if err != nil {
		return "", fmt.Errorf("genaimsg: system message: %w", err)
	}
	return encode(systemParts(m, scrub))
}

// ToolArguments returns tool call arguments as JSON with every string leaf
// scrubbed and credential-named fields replaced, keeping key order. Input
// that is not valid JSON is scrubbed as plain text. Empty input gives "".
func ToolArguments(args json.RawMessage, scrub func(string) string) string {
	scrub = orIdentity(scrub)
	if len(bytes.TrimSpace(args)) == 0 {
		return ""
	}
	out, err := scrubJSON(args, scrub)
	if err != nil {
		return scrub(string(args))
	}
	return string(out)
}

// ToolResult returns the text of a Pi tool result ({"content": [blocks],
// "details": …}), scrubbed. Text blocks are joined by newlines; images are
// noted without their data; "details" is tool-specific and left out. A result
// of another shape is returned as scrubbed JSON.
func ToolResult(result json.RawMessage, scrub func(string) string) string {
	scrub = orIdentity(scrub)
	trimmed := bytes.TrimSpace(result)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return ""
	}
	if trimmed[0] == '"' {
		var s string
		if json.Unmarshal(trimmed, &s) == nil {
			return scrub(s)
		}
	}
	if m, err := decodeObject(trimmed); err == nil {
		if content, ok := m["content"]; ok {
			return scrub(contentText(content))
		}
	}
	return ToolArguments(trimmed, scrub)
}

// FinishReason maps a Pi stopReason to a GenAI finish reason. Reasons with
// no counterpart in the conventions ("aborted", "deferred", "pending") are
// passed through, which the conventions allow; an empty one is "unknown".
func FinishReason(stopReason string) string {
	switch stopReason {
	case "toolUse":
		return "tool_call"
	case "":
		return "unknown"
	default: // "stop", "length" and "error" are the same in both
		return stopReason
	}
}

// finishReason is FinishReason, with a stop reason it passes through
// scrubbed: that is Pi's text, not a word of the conventions.
func finishReason(stopReason string, scrub func(string) string) string {
	if fr := FinishReason(stopReason); fr != stopReason {
		return fr
	}
	return scrub(stopReason)
}

func convertMessage(m map[string]json.RawMessage, scrub func(string) string) (message, bool) {
	role := field[string](m, "role")
	switch role {
	case "system":
		return message{Role: "system", Parts: systemParts(m, scrub)}, true
	case "user", "assistant", "custom":
		msg := message{Role: role, Parts: contentParts(m["content"], scrub)}
		if role == "custom" {
			msg.Role, msg.Name = "user", role
		}
		return msg, true
	case "toolResult":
		return message{Role: "tool", Parts: []any{toolCallResponsePart{
			Type:     partToolCallResponse,
			ID:       field[string](m, "toolCallId"),
			Response: scrub(contentText(m["content"])),
		}}}, true
	case "bashExecution":
		if field[bool](m, "excludeFromContext") {
			return message{}, false
		}
		return message{Role: "user", Name: role, Parts: []any{
			textPart{Type: partText, Content: scrub(bashText(m))},
		}}, true
	case "branchSummary", "compactionSummary":
		return message{Role: "user", Name: role, Parts: []any{
			textPart{Type: partText, Content: scrub(field[string](m, "summary"))},
		}}, true
	case "":
		role = "unknown"
	default:
		role = scrub(role)
	}
	return message{Role: role, Parts: contentParts(m["content"], scrub)}, true
}

// bashText renders a shell command run by the user, and its outcome, as the
// text the model is given in its place.
func bashText(m map[string]json.RawMessage) string {
	var b strings.Builder
	b.WriteString("$ ")
	b.WriteString(field[string](m, "command"))
	if out := field[string](m, "output"); out != "" {
		b.WriteString("\n")
		b.WriteString(out)
	}
	switch {
	case field[bool](m, "cancelled"):
		b.WriteString("\n[cancelled]")
	case m["exitCode"] != nil && string(m["exitCode"]) != "null" && string(m["exitCode"]) != "0":
		b.WriteString("\n[exit code " + string(m["exitCode"]) + "]")
	}
	if field[bool](m, "truncated") {
		b.WriteString("\n[output truncated]")
	}
	return b.String()
}

// systemParts turns a system message's content and named sections into parts.
// Pi 1.6.0 sends its leading system message with empty content and the
// whole prompt in sections, so empty text is dropped.
func systemParts(m map[string]json.RawMessage, scrub func(string) string) []any {
	nonEmpty := func(s string) string {
		if s == "" {
			return ""
		}
		return scrub(s)
	}
	parts := []any{}
	for _, p := range contentParts(m["content"], nonEmpty) {
		if tp, ok := p.(textPart); ok && tp.Content == "" {
			continue
		}
		parts = append(parts, p)
	}
	for _, sec := range orderedSections(m["sections"]) {
		if sec.removed {
			parts = append(parts, sectionRemovedPart{Type: "section_removed", Name: scrub(sec.name)})
			continue
		}
		parts = append(parts, textPart{Type: partText, Name: scrub(sec.name), Content: scrub(sec.text)})
	}
	return parts
}

type section struct {
	name, text string
	removed    bool
}

// orderedSections decodes a sections object keeping its key order, which is
// the order Pi renders the prompt in (a Go map would lose it).
func orderedSections(raw json.RawMessage) []section {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []section
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		var text *string
		if json.Unmarshal(v, &text) != nil {
			continue // not a string: not a section Pi defines
		}
		if text == nil {
			out = append(out, section{name: name, removed: true})
		} else {
			out = append(out, section{name: name, text: *text})
		}
	}
	return out
}

// contentParts converts Pi content (a string or an array of blocks) to parts.
func contentParts(raw json.RawMessage, scrub func(string) string) []any {
	parts := []any{}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return parts
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			parts = append(parts, textPart{Type: partText, Content: scrub(s)})
		}
	case '[':
		var blocks []json.RawMessage
		if json.Unmarshal(raw, &blocks) != nil {
			return parts
		}
		for _, b := range blocks {
			parts = append(parts, blockPart(b, scrub))
		}
	}
	return parts
}

func blockPart(raw json.RawMessage, scrub func(string) string) any {
	b, err := decodeObject(raw)
	if err != nil {
		return genericPart{Type: "unknown"}
	}
	switch typ := field[string](b, "type"); typ {
	case "text":
		return textPart{Type: partText, Content: scrub(field[string](b, "text"))}
	case "thinking":
		return textPart{Type: partReasoning, Content: scrub(field[string](b, "thinking")), Redacted: field[bool](b, "redacted")}
	case "toolCall":
		return toolCallPart{
			Type:      partToolCall,
			ID:        field[string](b, "id"),
			Name:      scrub(field[string](b, "name")), // a name is text someone chose, as the span's
			Arguments: argumentsJSON(b["arguments"], scrub),
		}
	case "image":
		return imagePart{Type: partImage, Modality: "image", MimeType: scrub(field[string](b, "mimeType")), Size: base64Size(b["data"]), Note: imageNote}
	case "":
		return genericPart{Type: "unknown", Content: scrubbedText(b, scrub)}
	default:
		return genericPart{Type: scrub(typ), Content: scrubbedText(b, scrub)}
	}
}

func scrubbedText(b map[string]json.RawMessage, scrub func(string) string) string {
	if t := field[string](b, "text"); t != "" {
		return scrub(t)
	}
	return ""
}

// argumentsJSON returns scrubbed arguments as embeddable JSON: the scrubbed
// value, a JSON string when the arguments are not valid JSON, or null.
func argumentsJSON(raw json.RawMessage, scrub func(string) string) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null")
	}
	if out, err := scrubJSON(raw, scrub); err == nil {
		return out
	}
	s, _ := encode(scrub(string(raw)))
	return json.RawMessage(s)
}

// contentText joins the text of Pi content (a string or blocks) as the
// model would read it; images are noted, not included.
func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var texts []string
	for _, rb := range blocks {
		b, err := decodeObject(rb)
		if err != nil {
			continue
		}
		switch typ := field[string](b, "type"); typ {
		case "text":
			texts = append(texts, field[string](b, "text"))
		case "image":
			texts = append(texts, fmt.Sprintf("[image %s, about %d bytes, %s]", field[string](b, "mimeType"), base64Size(b["data"]), imageNote))
		default:
			if t := field[string](b, "text"); t != "" {
				texts = append(texts, t)
			}
		}
	}
	return strings.Join(texts, "\n")
}

// base64Size estimates the decoded size of a base64 JSON string without
// decoding it.
func base64Size(raw json.RawMessage) int {
	n := len(bytes.TrimSpace(raw)) - 2 // the quotes
	if n <= 0 {
		return 0
	}
	return n * 3 / 4
}

func orIdentity(scrub func(string) string) func(string) string {
	if scrub == nil {
		return func(s string) string { return s }
	}
	return scrub
}

var errNotObject = errors.New("not a JSON object")

func decodeObject(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errNotObject
	}
	return m, nil
}

// field returns a field as a T, or T's zero value when it is absent or
// not a T.
func field[T any](m map[string]json.RawMessage, key string) T {
	var v T
	if raw, ok := m[key]; ok {
		_ = json.Unmarshal(raw, &v)
	}
	return v
}

// encode marshals v without HTML escaping, so "<" and "&" in captured code
// and shell commands stay readable.
func encode(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("genaimsg: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
