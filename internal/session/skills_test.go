package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readCall is an assistant message that calls read on path.
func (f *file) readCall(id, path string) string {
	content := []any{map[string]any{"type": "toolCall", "id": id, "name": "read", "arguments": map[string]any{"path": path}}}
	return f.message(map[string]any{"role": "assistant", "content": content, "api": "openai-completions", "provider": "prov", "model": "mod",
		"usage": usage{10, 1}.json(), "stopReason": "toolUse", "timestamp": ms(f.now.Add(10 * time.Millisecond)), "durationMs": 80})
}

func (f *file) readResult(id string) string {
	return f.message(map[string]any{"role": "toolResult", "toolCallId": id, "toolName": "read", "content": []any{map[string]any{"type": "text", "text": "skill body"}},
		"isError": false, "timestamp": ms(f.now.Add(100 * time.Millisecond))})
}

// TestSkillsFromTheFile: a run that loads one skill by /skill:name and
// one by reading its SKILL.md lists both on its root; the read's tool span
// names its skill, and the model calls after a load carry the skill
// loaded last. Without content capture all the same.
func TestSkillsFromTheFile(t *testing.T) {
	f := newFile(nil)
	f.message(map[string]any{"role": "user", "timestamp": ms(f.now), "content": []any{map[string]any{"type": "text",
		"text": "<skill name=\"release-notes\" location=\"/home/me/.pi/agent/skills/release-notes/SKILL.md\">\nReferences are relative to /home/me/.pi/agent/skills/release-notes.\n\nWrite notes.\n</skill>\n\nfor v2"}}})
	f.assistant("toolUse", usage{100, 10}, "bash:c0")
	f.result("c0", false)
	f.readCall("c1", "/home/me/.pi/agent/skills/pdf-tools/SKILL.md")
	f.readResult("c1")
	f.assistant("stop", usage{200, 20})
	tr := traceBytes(t, f.bytes(), Config{})
	r := runs(t, tr, 1)[0]
	if got := r.str("pi.skills"); got != `["release-notes","pdf-tools"]` {
		t.Errorf("root pi.skills = %s", got)
	}
	var reads, bashes []*node
	for _, n := range r.find("execute_tool") {
		if n.name() == "execute_tool read" {
			reads = append(reads, n)
		} else {
			bashes = append(bashes, n)
		}
	}
	if len(reads) != 1 || reads[0].str("pi.skill") != "pdf-tools" {
		t.Errorf("read spans %d, pi.skill %v", len(reads), reads)
	}
	if len(bashes) != 1 || bashes[0].str("pi.skill") != "<none>" {
		t.Error("a bash call loads no skill")
	}
	chats := r.find("chat")
	if len(chats) != 3 || chats[0].str("pi.skill") != "release-notes" || chats[2].str("pi.skill") != "pdf-tools" {
		var got []string
		for _, c := range chats {
			got = append(got, c.str("pi.skill"))
		}
		t.Errorf("chat pi.skill = %v, want release-notes, release-notes, pdf-tools", got)
	}
}

// TestNoFalseSkills: the recorded sessions of every Pi version, none of
// which loads a skill, get no pi.skill or pi.skills anywhere.
func TestNoFalseSkills(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(sessionsDir("*"), "*.jsonl"))
	if err != nil || len(files) < 10 {
		t.Fatalf("%d session files: %v", len(files), err)
	}
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, ".stream.jsonl") || strings.HasSuffix(path, ".in.jsonl") {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, root := range traceBytes(t, b, Config{}).roots {
			var walk func(*node)
			walk = func(n *node) {
				checked++
				for _, k := range []string{"pi.skill", "pi.skills"} {
					if _, ok := n.attr(k); ok {
						t.Errorf("%s: %s has %s=%s", filepath.Base(path), n.name(), k, n.str(k))
					}
				}
				for _, c := range n.children {
					walk(c)
				}
			}
			walk(root)
		}
	}
	if checked < 50 {
		t.Errorf("only %d spans checked", checked)
	}
}

// TestFailedSkillReadLoadsNothing: a read of a SKILL.md that fails (no
// such file) loads no skill: no pi.skill on the call or the model calls
// after it, no pi.skills on the root; a read that succeeds then does.
func TestFailedSkillReadLoadsNothing(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	f.readCall("c1", "/home/me/.pi/agent/skills/pdf-tools/SKILL.md")
	f.message(map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": "read",
		"content": []any{map[string]any{"type": "text", "text": "ENOENT: no such file or directory, access '/home/me/.pi/agent/skills/pdf-tools/SKILL.md'"}},
		"isError": true, "timestamp": ms(f.now.Add(100 * time.Millisecond))})
	f.assistant("stop", usage{200, 20})
	r := runs(t, traceBytes(t, f.bytes(), Config{}), 1)[0]
	if got := r.str("pi.skills"); got != "<none>" {
		t.Errorf("root pi.skills = %s after a failed read", got)
	}
	for _, n := range append(r.find("execute_tool"), r.find("chat")...) {
		if got := n.str("pi.skill"); got != "<none>" {
			t.Errorf("%s has pi.skill %s after a failed read", n.name(), got)
		}
	}
}
