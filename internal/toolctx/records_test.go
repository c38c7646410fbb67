package toolctx

import (
	"reflect"
	"testing"
)

func TestCalls(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  string
		want []Call
	}{
		{"tool start", `{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"ls"}}`,
			[]Call{{ID: "c1", Command: "ls"}}},
		{"stream message end", `{"type":"message_end","message":{"role":"assistant","content":[` +
			`{"type":"text","text":"two calls"},` +
			`{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"make"}},` +
			`{"type":"toolCall","id":"c2","name":"read","arguments":{"path":"x"}},` +
			`{"type":"toolCall","id":"c3","name":"bash","arguments":{"command":"go test"}}]}}`,
			[]Call{{ID: "c1", Command: "make"}, {ID: "c3", Command: "go test"}}},
		{"session entry", `{"type":"message","id":"e1","message":{"role":"assistant","content":[` +
			`{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"pwd"}}]}}`,
			[]Call{{ID: "c1", Command: "pwd"}}},
		// Pi before 1.x repeats the message in every update: the call is
		// published at message_end, once.
		{"update snapshot", `{"type":"message_update","message":{"role":"assistant","content":[` +
			`{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"pwd"}}]}}`, nil},
		{"user message", `{"type":"message_end","message":{"role":"user","content":[` +
			`{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"pwd"}}]}}`, nil},
		{"other tool", `{"type":"tool_execution_start","toolCallId":"c1","toolName":"read","args":{"path":"x"}}`, nil},
		{"no command", `{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{}}`, nil},
		{"malformed", `{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall"`, nil},
		{"no call", `{"type":"agent_start"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Calls([]byte(tc.rec)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Calls = %+v, want %+v", got, tc.want)
			}
		})
	}
}
