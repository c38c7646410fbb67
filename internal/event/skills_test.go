package event_test

import (
	"encoding/json"
	"testing"

	"github.com/pi-otel/pi-otel/internal/event"
)

func TestReadSkill(t *testing.T) {
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"read", `{"path":"/home/u/.pi/agent/skills/pdf-tools/SKILL.md"}`, "pdf-tools"},
		{"read", `{"path":"C:\\Users\\u\\.agents\\skills\\deploy\\SKILL.md","offset":1}`, "deploy"},
		{"read", `{"path":"/repo/docs/README.md"}`, ""},
		{"read", `{"path":"/repo/My Notes/SKILL.md"}`, ""}, // not a skill's name
		{"read", `{"path":"SKILL.md"}`, ""},                // no folder to name it
		{"read", `{"path":"/x/SKILL.md.bak"}`, ""},
		{"bash", `{"command":"cat /s/pdf-tools/SKILL.md"}`, ""},
		{"read", `not json SKILL.md`, ""},
	} {
		if got := event.ReadSkill(tc.tool, json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("ReadSkill(%s, %s) = %q, want %q", tc.tool, tc.args, got, tc.want)
		}
	}
}

func TestPromptSkill(t *testing.T) {
	for content, want := range map[string]string{
		`[{"type":"text","text":"<skill name=\"pdf-tools\" location=\"/s/pdf-tools/SKILL.md\">\nReferences are relative to /s/pdf-tools.\n\nbody\n</skill>\n\nextract a.pdf"}]`: "pdf-tools",
		`"<skill name=\"deploy\" location=\"/s/SKILL.md\">\nbody\n</skill>"`:                                                                                                    "deploy",
		`[{"type":"text","text":"please explain <skill name=\"x\"> tags"}]`:                                                                                                     "",
		`[{"type":"text","text":"<skill name=\"Bad Name\" location=\"/s\">"}]`:                                                                                                  "",
		`[{"type":"text","text":"/skill:pdf-tools"}]`:                                                                                                                           "", // an unknown skill passes through unexpanded
		`[{"type":"image","data":"x"}]`:                                                                                                                                         "",
	} {
		if got := event.PromptSkill(json.RawMessage(content)); got != want {
			t.Errorf("PromptSkill(%s) = %q, want %q", content, got, want)
		}
	}
}

// TestDecodeNotesSkills: the decoder sets the facts on the stream's
// records, through its fast and slow paths alike.
func TestDecodeNotesSkills(t *testing.T) {
	for _, rec := range []string{
		`{"type":"tool_execution_start","toolCallId":"c1","toolName":"read","args":{"path":"/s/pdf-tools/SKILL.md"}}`,
		`{"type":"tool_execution_start","type2":1,"toolCallId":"c1","toolName":"read","args":{"path":"/s/pdf-tools/SKILL.md"},"x":{"a":[1,{"b":"\u00e9"}]}}`,
	} {
		ev, err := event.Decode([]byte(rec), event.Options{})
		if err != nil || ev.Skill != "pdf-tools" {
			t.Errorf("Decode(%s): skill %q, %v", rec, ev.Skill, err)
		}
	}
	rec := `{"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"<skill name=\"pdf-tools\" location=\"/s/SKILL.md\">\nb\n</skill>"}],"timestamp":1}}`
	d := event.NewDecoder(event.Options{})
	ev, err := d.Decode([]byte(rec))
	if err != nil || ev.Message == nil || ev.Message.Skill != "pdf-tools" {
		t.Errorf("Decode(user message): %+v, %v", ev.Message, err)
	}
	ev, err = d.Decode([]byte(`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"<skill name=\"pdf-tools\" location=\"/s\">"}],"timestamp":1}}`))
	if err != nil || ev.Message == nil || ev.Message.Skill != "" {
		t.Errorf("an assistant quoting a skill block loads none: %+v, %v", ev.Message, err)
	}
}
