package session

import (
	"strings"
	"testing"
	"time"
)

// The chat-timing rule: a model call starts at its message's timestamp,
// which Pi takes as the request goes out, and its turn encloses it. Each
// shape below is a whole session file; t0 is 2026-12-01T07:04:24Z.
const orderT0 = 1796108664000

// orderFile is a session file of lines, each with the header's id.
func orderFile(lines ...string) []byte {
	hdr := `{"type":"session","version":3,"id":"0198a2b4-3333-7000-8000-000000000003","timestamp":"2026-12-01T07:04:24.000Z","cwd":"/tmp"}`
	return []byte(hdr + "\n" + strings.Join(lines, "\n") + "\n")
}

// callsStartOnTime checks that the chat spans, in order, start at want
// (ms after t0) and that every span sits within its parent.
func callsStartOnTime(t *testing.T, b []byte, want ...int64) {
	t.Helper()
	tr := traceBytes(t, b, Config{})
	within(t, "file", tr.roots)
	var chats []*node
	for _, r := range tr.roots {
		chats = append(chats, r.find("chat")...)
	}
	if len(chats) != len(want) {
		t.Fatalf("%d chat spans, want %d", len(chats), len(want))
	}
	for i, c := range chats {
		if got, w := c.s.StartTime(), time.UnixMilli(orderT0+want[i]); !got.Equal(w) {
			t.Errorf("chat %d starts at t0+%v, want t0+%dms (its message's timestamp)", i, got.Sub(time.UnixMilli(orderT0)), want[i])
		}
	}
}

// TestCallStartsAtItsMessageAfterAnEntryBetween: an entry written while
// the next call runs (a session_info, a thinking level) sits between a
// tool result and the assistant message that follows it; it neither
// moves the call nor leaves the call outside its turn. Seen in real
// files: chat spans starting 1.3 s to 17 s after their messages.
func TestCallStartsAtItsMessageAfterAnEntryBetween(t *testing.T) {
	callsStartOnTime(t, orderFile(
		`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-01T07:04:24.100Z","message":{"role":"user","content":"go","timestamp":1796108664100}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T07:04:25.200Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}],"provider":"fake","model":"fake-model","stopReason":"toolUse","timestamp":1796108664200,"durationMs":1000}}`,
		`{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-12-01T07:04:26.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":1796108666000}}`,
		`{"type":"session_info","id":"i1","parentId":"r1","timestamp":"2026-12-01T07:04:29.000Z","name":"named mid-call"}`,
		`{"type":"thinking_level_change","id":"k1","parentId":"i1","timestamp":"2026-12-01T07:04:30.000Z","thinkingLevel":"high"}`,
		`{"type":"message","id":"a2","parentId":"k1","timestamp":"2026-12-01T07:04:32.100Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"fake","model":"fake-model","stopReason":"stop","timestamp":1796108666100,"durationMs":6000}}`,
	), 200, 2100)
}

// TestCallStartsWithinItsTurn: the TUI's /new order (the shape that
// 01add69 met under load: chat [51.999, 52.013] outside pi.turn
// [52.013, 52.013]). Pi saves a new session's first entries once the
// first answer is in, so the system message's time is later than the
// user's and the call's own.
func TestCallStartsWithinItsTurn(t *testing.T) {
	callsStartOnTime(t, orderFile(
		`{"type":"message","id":"s1","parentId":null,"timestamp":"2026-12-01T07:04:24.020Z","message":{"role":"system","content":"","timestamp":1796108664020}}`,
		`{"type":"message","id":"u1","parentId":"s1","timestamp":"2026-12-01T07:04:24.020Z","message":{"role":"user","content":"go","timestamp":1796108664001}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T07:04:24.020Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"fake","model":"fake-model","stopReason":"stop","timestamp":1796108664006,"durationMs":14}}`,
	), 6)
}

// TestCallStartsAtItsMessageInPiOrder: Pi's normal order, every entry
// written as it happens.
func TestCallStartsAtItsMessageInPiOrder(t *testing.T) {
	callsStartOnTime(t, orderFile(
		`{"type":"model_change","id":"m1","parentId":null,"timestamp":"2026-12-01T07:04:24.010Z","provider":"fake","modelId":"fake-model"}`,
		`{"type":"message","id":"u1","parentId":"m1","timestamp":"2026-12-01T07:04:24.100Z","message":{"role":"user","content":"go","timestamp":1796108664100}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T07:04:25.200Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}],"provider":"fake","model":"fake-model","stopReason":"toolUse","timestamp":1796108664200,"durationMs":1000}}`,
		`{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-12-01T07:04:26.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":1796108666000}}`,
		`{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-12-01T07:04:27.100Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"fake","model":"fake-model","stopReason":"stop","timestamp":1796108666100,"durationMs":1000}}`,
	), 200, 2100)
}
