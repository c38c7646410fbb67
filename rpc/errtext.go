package rpc

import "strings"

const maxErrorText = 256

// errorText is what a failed command's span says about the failure. Pi's
// text is kept (it is how a reader learns why), with two guards when
// content capture is off: the command's own content (a prompt, a bash
// command, a session name) is masked wherever Pi echoes it, and a parse
// error, whose text quotes the malformed line, loses its quotes.
func (t *Tracker) errorText(c *command, text string) string {
	if s := t.cfg.content; s != nil {
		return s.Scrub(text)
	}
	if c.name == typeParse {
		text = unquote(text)
	}
	for _, v := range c.content {
		if len([]rune(v)) >= minMasked {
			text = strings.ReplaceAll(text, v, "[content]")
		}
	}
	return clip(text, maxErrorText)
}

// minMasked is the shortest content value that is masked: a shorter one
// would mangle unrelated words of the message and carries nothing.
const minMasked = 4

// unquote replaces the quoted parts of a JSON.parse message, which echo
// the input, e.g. `Unexpected token 'h', "hello" is not valid JSON`.
func unquote(s string) string {
	if i, j := strings.IndexByte(s, '"'), strings.LastIndexByte(s, '"'); i >= 0 && j > i {
		s = s[:i] + `"…"` + s[j+1:]
	}
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '\'':
			if !in {
				b.WriteString("'…")
			} else {
				b.WriteRune('\'')
			}
			in = !in
		case !in:
			b.WriteRune(r)
		}
	}
	if in {
		b.WriteRune('\'')
	}
	return b.String()
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
