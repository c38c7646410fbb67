package agentmap

import (
	"slices"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// maxSkills bounds the skills a run lists: Pi loads a few at most, and a
// run that reads hundreds of SKILL.md files should not grow its root.
const maxSkills = 32

// runSkills are the skills a run loaded, in order, and the last one, to
// which the model calls that follow are charged (pi.skill on chat spans,
// the cost metrics' skill label).
type runSkills struct {
	loaded []string
	last   string
}

// load notes a skill the run loaded (a read of its SKILL.md, or
// /skill:name); "" is none.
func (s *runSkills) load(name string) {
	if name == "" {
		return
	}
	s.last = name
	if !slices.Contains(s.loaded, name) && len(s.loaded) < maxSkills {
		s.loaded = append(s.loaded, name)
	}
}

// current is pi.skill for a model call: the skill loaded last, if any.
func (s *runSkills) current() []attribute.KeyValue {
	if s.last == "" {
		return nil
	}
	return []attribute.KeyValue{vocab.SkillKey.String(s.last)}
}

// list is pi.skills for the root: every skill the run loaded.
func (s *runSkills) list() []attribute.KeyValue {
	if len(s.loaded) == 0 {
		return nil
	}
	return []attribute.KeyValue{vocab.SkillsKey.StringSlice(s.loaded)}
}

// toolSkill marks a tool call that loaded a skill with pi.skill, and the
// run with the skill: only once the call succeeded, as a read that
// failed (no such SKILL.md) loads nothing.
func toolSkill(r *run, t *tool, failed bool, attrs []attribute.KeyValue) []attribute.KeyValue {
	if t.skill == "" || failed {
		return attrs
	}
	r.skills.load(t.skill)
	return append(attrs, vocab.SkillKey.String(t.skill))
}
