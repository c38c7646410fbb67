package rpc

import (
	"strings"

	"github.com/pi-otel/pi-otel/internal/errtext"
)

// errorText is what a failed command's span says about the failure. Pi's
// error texts echo prompts, commands and provider errors, so without
// content capture only the safe summary or the command's error class is
// kept (see errtext); with it, the whole text, scrubbed.
func (t *Tracker) errorText(c *command, text string) string {
	return errtext.Text(text, t.cfg.content, errorType(c, text))
}

// errorType classifies a failed command for error.type.
func errorType(c *command, text string) string {
	switch {
	case c.name == typeParse:
		return "parse_error"
	case strings.HasPrefix(text, "Unknown command"):
		return "unknown_command"
	case strings.HasPrefix(text, "Agent is already processing"):
		return "busy"
	}
	return "rpc_error"
}
