package toolctx

import (
	"bytes"
	"encoding/json"
)

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
