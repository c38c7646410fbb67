package event_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/pi-otel/pi-otel/internal/event"
)

// ToolCalls reads what encoding/json reads, or says it cannot.
func TestToolCallsAsEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		in       string
		fallback bool
	}{
		{in: `[]`},
		{in: ` [ ] `},
		{in: `[{"type":"text","text":"hi"}]`},
		{in: `[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls","type":"x"}}]`},
		{in: `[{"type":"thinking","thinking":"a \"toolCall\" [{"},{"type":"toolCall","id":"c1","name":"read"},{"type":"toolCall","name":"write","id":"c2"}]`},
		{in: `[ {"type" : "toolCall" , "id" : "c\u00e91" , "name" : "b\nash"} , null ]`},
		{in: `[{"type":"toolCall","id":"a","id":"b","name":null}]`},
		{in: `[{"type":"toolCall"},{"id":"x","name":"y"}]`},
		{in: `[{"Type":"toolCall","id":"c1","name":"bash"}]`, fallback: true},
		{in: `[{"t\u0079pe":"toolCall","id":"c1","name":"bash"}]`, fallback: true},
		{in: `[{"type":"toolCall","id":7,"name":"bash"}]`, fallback: true},
		{in: `["toolCall"]`, fallback: true},
		{in: `[[{"type":"toolCall"}]]`, fallback: true},
		{in: `"toolCall"`, fallback: true},
		{in: `{"type":"toolCall"}`, fallback: true},
	} {
		ids, names, ok := event.ToolCalls([]byte(c.in))
		if ok == c.fallback {
			t.Errorf("%s: ok = %v", c.in, ok)
			continue
		}
		if !ok {
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(c.in), &blocks); err != nil {
			t.Errorf("%s: fast path took what encoding/json refuses: %v", c.in, err)
			continue
		}
		var wantIDs, wantNames []string
		for _, b := range blocks {
			if b.Type == "toolCall" {
				wantIDs, wantNames = append(wantIDs, b.ID), append(wantNames, b.Name)
			}
		}
		if !slices.Equal(ids, wantIDs) || !slices.Equal(names, wantNames) {
			t.Errorf("%s: got %q %q, want %q %q", c.in, ids, names, wantIDs, wantNames)
		}
	}
}
