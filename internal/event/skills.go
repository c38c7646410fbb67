package event

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Pi loads a skill in one of two ways (its docs/skills.md): the model
// reads the skill's SKILL.md with the read tool, or the user types
// /skill:name, which Pi expands, before any record is written, into a
// user message that opens with <skill name="name" location="…">. Both
// are facts of the record, found here at decode time so that they travel
// on the event even when content is not kept.

// skillOpen starts a user message that /skill:name expanded.
const skillOpen = `<skill name="`

// ReadSkill is the skill a tool call loads: the folder name of the
// SKILL.md a read call reads, when it is a skill's name; else "".
func ReadSkill(toolName string, args json.RawMessage) string {
	if toolName != "read" || len(args) == 0 || !bytes.Contains(args, []byte("SKILL.md")) {
		return ""
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil {
		return ""
	}
	p := strings.ReplaceAll(a.Path, `\`, "/")
	dir, ok := strings.CutSuffix(p, "/SKILL.md")
	if !ok {
		return ""
	}
	if i := strings.LastIndex(dir, "/"); i >= 0 {
		dir = dir[i+1:]
	}
	return SkillName(dir)
}

// PromptSkill is the skill a user message's /skill:name expansion names,
// or "". content is Pi's message content: a string, or blocks of which
// the first text one counts.
func PromptSkill(content json.RawMessage) string {
	// A cheap test first; "<" may be escaped (\u003c) by another writer.
	if len(content) == 0 || !bytes.Contains(content, []byte(`skill name=\"`)) {
		return ""
	}
	var text string
	if content[0] == '"' {
		if json.Unmarshal(content, &text) != nil {
			return ""
		}
	} else {
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(content, &blocks) != nil {
			return ""
		}
		for _, b := range blocks {
			if b.Type == "text" {
				text = b.Text
				break
			}
		}
	}
	rest, ok := strings.CutPrefix(text, skillOpen)
	if !ok {
		return ""
	}
	name, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return ""
	}
	return SkillName(name)
}

// SkillName is name when it is a valid skill name as the Agent Skills
// specification has it (lower-case letters, digits and single inner
// hyphens, at most 64 characters), else "": a bounded label, and no
// stray path or prose taken for a skill.
func SkillName(name string) string {
	if name == "" || len(name) > 64 || name[0] == '-' || name[len(name)-1] == '-' || strings.Contains(name, "--") ||
		strings.ContainsFunc(name, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') }) {
		return ""
	}
	return name
}

// noteSkills sets the skill facts of a decoded record.
func (ev *Event) noteSkills() {
	if ev.Type == TypeToolExecutionStart {
		ev.Skill = ReadSkill(ev.ToolName, ev.Args)
	}
	if m := ev.Message; m != nil && m.Role == "user" {
		m.Skill = PromptSkill(m.Content)
	}
}
