package toolctx

import "testing"

func TestRPCBash(t *testing.T) {
	for _, c := range []struct {
		rec, id, command string
		ok               bool
	}{
		{`{"id":"b1","type":"bash","command":"ls -l"}`, "rpc-bash:b1", "ls -l", true},
		{`{"type":"bash","command":""}`, "rpc-bash:", "", true},
		{`{"id":"b1","type":"bash","command":5}`, "", "", false},
		{`{"id":"b1","type":"bash"}`, "", "", false},
		{`{"id":7,"type":"bash","command":"ls"}`, "", "", false},
		// Pi's answer is the tracker's to read (rpc.WithBashAnswered).
		{`{"id":"b1","type":"response","command":"bash","success":true}`, "", "", false},
		{`{"id":"p1","type":"prompt","message":"run bash"}`, "", "", false},
		{`{"type":"bash","command":"ls"`, "", "", false},
	} {
		id, command, ok := RPCBash([]byte(c.rec))
		if id != c.id || command != c.command || ok != c.ok {
			t.Errorf("RPCBash(%s) = %q, %q, %v; want %q, %q, %v", c.rec, id, command, ok, c.id, c.command, c.ok)
		}
	}
}
