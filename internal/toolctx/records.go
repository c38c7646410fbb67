package toolctx

import (
	"bytes"
	"encoding/json"

	"github.com/pi-otel/pi-otel/internal/event"
)

// BashTool is the name of Pi's built-in bash tool, the one whose calls run
// the hook.
const BashTool = "bash"

// Call is a bash tool call: its id and the command it runs.
type Call struct {
	ID      string
	Command string
}

// record is what Calls reads of a record: an assistant message's tool
// calls (message_end in a stream, a message entry in a session file), or
// a tool_execution_start.
type record struct {
	Type    string `json:"type"`
	Message *struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"message"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Args       json.RawMessage `json:"args"`
}

type block struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

type bashArgs struct {
	Command *string `json:"command"`
}

var (
	toolCallMark  = []byte(`"toolCall"`)
	toolStartMark = []byte(`"tool_execution_start"`)
)

// Calls returns the bash calls a record of Pi's asks for. Records without
// one cost a byte search; the command is used for a key and dropped.
func Calls(rec []byte) []Call {
	if !bytes.Contains(rec, toolCallMark) && !bytes.Contains(rec, toolStartMark) {
		return nil
	}
	// Only three types name calls; the others that mention one (Pi before
	// 1.x repeats the whole message in every message_update) are not
	// decoded again.
	switch typ, _ := event.Peek(rec); typ {
	case "tool_execution_start", "message_end", "message":
	default:
		return nil
	}
	var r record
	if json.Unmarshal(rec, &r) != nil {
		return nil
	}
	switch {
	case r.Type == "tool_execution_start":
		if c, ok := bashCall(r.ToolCallID, r.ToolName, r.Args); ok {
			return []Call{c}
		}
	case (r.Type == "message_end" || r.Type == "message") && r.Message != nil && r.Message.Role == "assistant":
		var calls []Call
		for _, raw := range r.Message.Content {
			if !bytes.Contains(raw, toolCallMark) {
				continue
			}
			var b block
			if json.Unmarshal(raw, &b) != nil || b.Type != "toolCall" {
				continue
			}
			if c, ok := bashCall(b.ID, b.Name, b.Arguments); ok {
				calls = append(calls, c)
			}
		}
		return calls
	}
	return nil
}

func bashCall(id, name string, args json.RawMessage) (Call, bool) {
	if name != BashTool || id == "" {
		return Call{}, false
	}
	var a bashArgs
	if json.Unmarshal(args, &a) != nil || a.Command == nil {
		return Call{}, false
	}
	return Call{ID: id, Command: *a.Command}, true
}

// rpcRecord is what RPC reads of a controller's command or Pi's response.
type rpcRecord struct {
	Type    string  `json:"type"`
	ID      string  `json:"id"`
	Command *string `json:"command"`
}

var bashMark = []byte(`"bash"`)

// RPCBash reads a controller's bash command ({"type":"bash",...}) or Pi's
// response to one ({"type":"response","command":"bash",...}): the user's
// shell command, which Pi runs in its bash outside any tool call.
func RPCBash(rec []byte) (id, command string, response, ok bool) {
	if !bytes.Contains(rec, bashMark) {
		return "", "", false, false
	}
	var r rpcRecord
	if json.Unmarshal(rec, &r) != nil || r.Command == nil {
		return "", "", false, false
	}
	switch {
	case r.Type == "bash":
		return "rpc-bash:" + r.ID, *r.Command, false, true
	case r.Type == "response" && *r.Command == "bash":
		return "rpc-bash:" + r.ID, "", true, true
	}
	return "", "", false, false
}
