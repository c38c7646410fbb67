package event

import (
	"bytes"
	"encoding/json"
)

// BashTool is the name of Pi's built-in bash tool.
const BashTool = "bash"

// typeEntryMessage is a session file's message entry, which package
// session decodes with this package too.
const typeEntryMessage = "message"

// BashCall is a call of Pi's bash tool that a record asks for: the tool
// call's id and the command bash runs. It is read (Options.BashCalls) for
// the per-call trace context of package toolctx, whose hook finds a call
// by its command; the command never goes into telemetry.
type BashCall struct {
	ID      string
	Command string
}

// noteBashCalls sets ev.BashCalls: a tool_execution_start's call, or the
// calls of an assistant message (message_end in a stream, a message entry
// in a session file). Other records that carry the message (message_start,
// the updates of Pi before 1.x) would only name the same calls again.
func (ev *Event) noteBashCalls() {
	switch ev.Type {
	case TypeToolExecutionStart:
		if ev.ToolName != BashTool || ev.ToolCallID == "" {
			return
		}
		if cmd, ok := BashCommand(ev.Args); ok {
			ev.BashCalls = []BashCall{{ID: ev.ToolCallID, Command: cmd}}
		}
	case TypeMessageEnd, typeEntryMessage:
		if m := ev.Message; m != nil && m.Role == "assistant" {
			ev.BashCalls = BashCalls(m.Content)
		}
	}
}

// BashCalls lists the bash calls of content, an assistant message's
// content as the Decoder returned it (so valid JSON): its blocks of type
// "toolCall" named "bash" that have an id and whose arguments give a
// string command (BashCommand). It reads them as decoding content into
// []struct{ Type, ID, Name string; Arguments json.RawMessage } with
// encoding/json would, fields of other kinds left unset.
func BashCalls(content []byte) []BashCall {
	// "toolCall" is there as is, or with a \u escape in it.
	if !bytes.Contains(content, []byte(`"toolCall"`)) && !bytes.Contains(content, []byte(`\u`)) {
		return nil
	}
	if calls, ok := bashCalls(content); ok {
		return calls
	}
	var blocks []struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(content, &blocks) // a field of another kind stays unset
	var calls []BashCall
	for _, b := range blocks {
		if b.Type == "toolCall" && b.Name == BashTool && b.ID != "" {
			if cmd, ok := BashCommand(b.Arguments); ok {
				calls = append(calls, BashCall{ID: b.ID, Command: cmd})
			}
		}
	}
	return calls
}

// bashCalls is BashCalls for the shapes it reads exactly as encoding/json;
// ok is false for the others (see ToolCalls).
func bashCalls(content []byte) (calls []BashCall, ok bool) {
	i := skipSpace(content, 0)
	if i >= len(content) || content[i] != '[' {
		// No array (a string, null): no blocks. Else encoding/json
		// reports the kind, and there are no blocks either.
		return nil, true
	}
	ok = eachBlock(content, i, func(typ, id, name string, args []byte) {
		if typ == "toolCall" && name == BashTool && id != "" {
			if cmd, ok := BashCommand(args); ok {
				calls = append(calls, BashCall{ID: id, Command: cmd})
			}
		}
	})
	if !ok {
		return nil, false
	}
	return calls, true
}

// BashCommand is the command of a bash call's arguments (valid JSON, or
// none), as decoding them into struct{ Command *string } with
// encoding/json gives it; ok is false when that fails or leaves it nil.
func BashCommand(args []byte) (command string, ok bool) {
	if cmd, ok, exact := bashCommand(args); exact {
		return cmd, ok
	}
	var a struct {
		Command *string `json:"command"`
	}
	if json.Unmarshal(args, &a) != nil || a.Command == nil {
		return "", false
	}
	return *a.Command, true
}

// bashCommand is BashCommand for the shapes it reads exactly as
// encoding/json; exact is false for the others.
func bashCommand(args []byte) (command string, ok, exact bool) {
	i := skipSpace(args, 0)
	if i >= len(args) || args[i] != '{' {
		// None, null or another kind: no command.
		return "", false, true
	}
	bad := false
	it := iterObject(args, i)
	for {
		k, vs, ve, more := it.next()
		if !more {
			break
		}
		switch {
		case !plainKey(k):
			return "", false, false
		case !Key(k, "command"):
			continue
		}
		// encoding/json takes a key in any case, the last one winning,
		// and fails on a value of another kind, whatever follows.
		switch v := args[vs:ve]; v[0] {
		case 'n':
			ok = false
		case '"':
			if !decodeString(v, &command) {
				return "", false, false
			}
			ok = true
		default:
			bad = true
		}
	}
	if bad || !ok {
		return "", false, true
	}
	return command, true, true
}
