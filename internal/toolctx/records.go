package toolctx

import (
	"bytes"
	"encoding/json"
)

// rpcCommand is what RPC reads of a controller's command.
type rpcCommand struct {
	Type    string  `json:"type"`
	ID      string  `json:"id"`
	Command *string `json:"command"`
}

var bashMark = []byte(`"bash"`)

// RPCBash reads a controller's bash command ({"type":"bash",...}): the
// user's shell command, which Pi runs in its bash outside any tool call.
// Pi's response to it ends it (RPCBashID).
func RPCBash(rec []byte) (id, command string, ok bool) {
	if !bytes.Contains(rec, bashMark) {
		return "", "", false
	}
	var r rpcCommand
	if json.Unmarshal(rec, &r) != nil || r.Command == nil || r.Type != "bash" {
		return "", "", false
	}
	return RPCBashID(r.ID), *r.Command, true
}

// RPCBashID names the entry of the controller's bash command id.
func RPCBashID(id string) string { return "rpc-bash:" + id }
