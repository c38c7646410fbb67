package session

import (
	"strings"
	"testing"
)

// TestCallStartsWithinItsTurn: an entry written after the model call
// began (the system message of a session Pi saves only once the first
// answer is in) moves the turn's start past the call's own start; the
// call then starts with its turn, not before it. Seen in the TUI under
// load: chat [51.999, 52.013] outside pi.turn [52.013, 52.013].
func TestCallStartsWithinItsTurn(t *testing.T) {
	lines := []string{
		`{"type":"session","version":3,"id":"0198a2b4-3333-7000-8000-000000000003","timestamp":"2026-12-01T07:04:24.000Z","cwd":"/tmp"}`,
		`{"type":"message","id":"s1","parentId":null,"timestamp":"2026-12-01T07:04:24.020Z","message":{"role":"system","content":"","timestamp":1796108664020}}`,
		`{"type":"message","id":"u1","parentId":"s1","timestamp":"2026-12-01T07:04:24.020Z","message":{"role":"user","content":"go","timestamp":1796108664001}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T07:04:24.020Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"fake","model":"fake-model","stopReason":"stop","timestamp":1796108664006,"durationMs":14}}`,
	}
	tr := traceBytes(t, []byte(strings.Join(lines, "\n")+"\n"), Config{})
	if len(tr.roots) != 1 {
		t.Fatalf("%d roots, want 1", len(tr.roots))
	}
	within(t, "file", tr.roots)
}
