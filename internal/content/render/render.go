// Package render is opt-in content capture as the mapper takes it
// (agentmap.Content): every value in the GenAI conventions' message
// format, redacted and truncated. The commands and the mapper's tests
// share it, so that what a test sees is what a user's backend gets.
package render

import (
	"encoding/json"

	"github.com/pi-otel/pi-otel/internal/content/genaimsg"
	"github.com/pi-otel/pi-otel/internal/content/redact"
)

// Content renders captured values. It implements agentmap.Content.
type Content struct {
	r     *redact.Redactor
	cap   *redact.Redactor // the same rules, at the whole-value limit
	whole int
}

// New returns a Content that redacts with the built-in rules and patterns
// and cuts each string to maxLen bytes (0: no limit), and a whole value to
// 16 times that.
func New(patterns []string, maxLen int) (*Content, error) {
	r, err := redact.New(redact.WithPatterns(patterns...), redact.WithMaxLength(maxLen))
	if err != nil {
		return nil, err
	}
	whole := 16 * maxLen
	capper, err := redact.New(redact.WithPatterns(patterns...), redact.WithMaxLength(whole))
	if err != nil {
		return nil, err
	}
	return &Content{r: r, cap: capper, whole: whole}, nil
}

// Scrub redacts and cuts one value.
func (c *Content) Scrub(s string) string { return c.r.String(s) }

// render bounds a whole JSON value at a multiple of the per-value limit:
// a long conversation must not make one attribute unbounded.
func (c *Content) render(s string, err error) string {
	if err != nil {
		return "[unrenderable: " + err.Error() + "]"
	}
	if c.whole > 0 && len(s) > c.whole {
		return c.cap.String(s)
	}
	return s
}

// InputMessages renders messages sent to a model. Each string inside a
// message is redacted and cut to the limit on its own, which keeps the
// JSON valid; the whole value is then bounded too.
func (c *Content) InputMessages(msgs [][]byte) string {
	return c.render(genaimsg.InputMessages(raw(msgs), c.r.String))
}

// OutputMessages renders a model's answers.
func (c *Content) OutputMessages(msgs [][]byte) string {
	return c.render(genaimsg.OutputMessages(raw(msgs), c.r.String))
}

// SystemInstructions renders a system message.
func (c *Content) SystemInstructions(msg []byte) string {
	return c.render(genaimsg.SystemInstructions(msg, c.r.String))
}

// ToolArguments renders a tool call's arguments.
func (c *Content) ToolArguments(args []byte) string {
	return c.render(genaimsg.ToolArguments(args, c.r.String), nil)
}

// ToolResult renders a tool's result as text.
func (c *Content) ToolResult(result []byte) string {
	return c.r.String(genaimsg.ToolResult(result, c.r.Redact))
}

func raw(msgs [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m
	}
	return out
}
