package ingest

import (
	"strings"
	"testing"
	"time"
)

// TestOutOfRangeNumberKeepsTheRecord: a tool end whose durationMs is 1e999
// still ends its tool, counted as a dropped field, not as a lost record
// that would leave the tool open and add a nameless one.
func TestOutOfRangeNumberKeepsTheRecord(t *testing.T) {
	s, m, rec, warn := recorded()
	for _, r := range []string{
		`{"type":"agent_start"}`,
		`{"type":"turn_start"}`,
		`{"type":"tool_execution_start","toolCallId":"a","toolName":"bash","args":{}}`,
		`{"type":"tool_execution_end","toolCallId":"a","toolName":"bash","durationMs":1e999,"isError":false}`,
		`{"type":"turn_end"}`,
		`{"type":"agent_end","messages":[],"willRetry":false}`,
		`{"type":"agent_settled"}`,
	} {
		s.Record([]byte(r))
	}
	var tools []string
	for _, sp := range rec.Spans.Ended() {
		if strings.HasPrefix(sp.Name(), "execute_tool") {
			tools = append(tools, sp.Name())
			for _, kv := range sp.Attributes() {
				if kv.Key == "pi.unfinished" || kv.Key == "pi.tool.duration_ms" {
					t.Errorf("tool span has %s", kv.Key)
				}
			}
		}
	}
	if len(tools) != 1 || tools[0] != "execute_tool bash" {
		t.Errorf("tool spans %q, want one execute_tool bash", tools)
	}
	if st := s.Stats(); st.FieldsDropped != 1 || st.Malformed != 0 {
		t.Errorf("stats %+v, want one dropped field and nothing malformed", st)
	}
	if a := m.Stats().Anomalies; len(a) != 0 {
		t.Errorf("anomalies %v", a)
	}
	if !strings.Contains(warn.String(), "traced without a field") {
		t.Errorf("warning %q", warn.String())
	}
}

// TestAnchorUsesARecordWithADroppedField: a header whose version is out
// of range still gives the replay its start time.
func TestAnchorUsesARecordWithADroppedField(t *testing.T) {
	got, ok := Anchor([][]byte{
		[]byte(`{"type":"agent_start"}`),
		[]byte(`{"type":"session","version":1e999,"id":"s","timestamp":"2026-11-29T10:00:00.000Z"}`),
	})
	if want := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC); !ok || !got.Equal(want) {
		t.Errorf("Anchor = %v, %v; want %v", got, ok, want)
	}
}
