package metrics

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// spend are the labels that say who spent what, beside provider and model:
// the agent (Pi or a subagent), the team (--team, one per pi-otel
// process), the repository a live run works in (vcs.repository.name) and
// the skill the run loaded last (pi.skill on a chat span).
// A label is left out when the span has no value for it. Each is a name
// through token, so a stray value becomes _OTHER rather than a new series
// per run; docs/operations.md states each one's cardinality.
func spend(a attrs) []attribute.KeyValue {
	out := []attribute.KeyValue{agentOf(a)}
	for _, k := range []attribute.Key{vocab.TeamKey, semconv.VCSRepositoryNameKey, vocab.SkillKey} {
		if v := token(a.str(k)); v != "" {
			out = append(out, k.String(v))
		}
	}
	return out
}
