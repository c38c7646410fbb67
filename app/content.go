package app

import (
	"encoding/json"

	"github.com/pi-otel/pi-otel/config"
	"github.com/pi-otel/pi-otel/genaimsg"
	"github.com/pi-otel/pi-otel/redact"
)

// content is the opt-in capture of prompts, arguments and outputs: every
// value is rendered in the GenAI message format, redacted and truncated.
type content struct {
	r *redact.Redactor
}

// newContent returns nil, capturing nothing, unless the user opted in.
func newContent(cfg config.Config) (*content, error) {
	if !cfg.CaptureContent {
		return nil, nil
	}
	r, err := redact.New(redact.WithPatterns(cfg.Redact...), redact.WithMaxLength(cfg.MaxContentLength))
	if err != nil {
		return nil, err
	}
	return &content{r: r}, nil
}

func (c *content) Scrub(s string) string { return c.r.String(s) }

// render redacts inside the JSON (so a secret never survives in a value)
// and then bounds the whole attribute.
func (c *content) render(s string, err error) string {
	if err != nil {
		return "[unrenderable: " + err.Error() + "]"
	}
	return c.r.String(s)
}

func (c *content) InputMessages(msgs [][]byte) string {
	return c.render(genaimsg.InputMessages(raw(msgs), c.r.Redact))
}

func (c *content) OutputMessages(msgs [][]byte) string {
	return c.render(genaimsg.OutputMessages(raw(msgs), c.r.Redact))
}

func (c *content) SystemInstructions(msg []byte) string {
	return c.render(genaimsg.SystemInstructions(msg, c.r.Redact))
}

func (c *content) ToolArguments(args []byte) string {
	return c.r.String(genaimsg.ToolArguments(args, c.r.Redact))
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
