package app

import (
	"encoding/json"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/content/genaimsg"
	"github.com/pi-otel/pi-otel/internal/content/redact"
)

// content is the opt-in capture of prompts, arguments and outputs: every
// value is rendered in the GenAI message format, redacted and truncated.
type content struct {
	r     *redact.Redactor
	cap   *redact.Redactor // the same rules, at the whole-value limit
	whole int
}

// newContent returns nil, capturing nothing, unless the user opted in. A
// nil interface, not a nil *content, so that callers may test for nil.
func newContent(cfg config.Config) (agentmap.Content, error) {
	if !cfg.CaptureContent {
		return nil, nil
	}
	r, err := redact.New(redact.WithPatterns(cfg.Redact...), redact.WithMaxLength(cfg.MaxContentLength))
	if err != nil {
		return nil, err
	}
	whole := 16 * cfg.MaxContentLength
	capper, err := redact.New(redact.WithPatterns(cfg.Redact...), redact.WithMaxLength(whole))
	if err != nil {
		return nil, err
	}
	return &content{r: r, cap: capper, whole: whole}, nil
}

func (c *content) Scrub(s string) string { return c.r.String(s) }

// render bounds a whole JSON value at a multiple of the per-value limit:
// a long conversation must not make one attribute unbounded.
func (c *content) render(s string, err error) string {
	if err != nil {
		return "[unrenderable: " + err.Error() + "]"
	}
	if c.whole > 0 && len(s) > c.whole {
		return c.cap.String(s)
	}
	return s
}

// Each string inside a message is redacted and cut to the limit on its
// own, which keeps the JSON valid; the whole value is then bounded too.
func (c *content) InputMessages(msgs [][]byte) string {
	return c.render(genaimsg.InputMessages(raw(msgs), c.r.String))
}

func (c *content) OutputMessages(msgs [][]byte) string {
	return c.render(genaimsg.OutputMessages(raw(msgs), c.r.String))
}

func (c *content) SystemInstructions(msg []byte) string {
	return c.render(genaimsg.SystemInstructions(msg, c.r.String))
}

func (c *content) ToolArguments(args []byte) string {
	return c.render(genaimsg.ToolArguments(args, c.r.String), nil)
}

func (c *content) ToolResult(result []byte) string {
	return c.r.String(genaimsg.ToolResult(result, c.r.Redact))
}

func raw(msgs [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		out[i] = m
	}
	return out
}
