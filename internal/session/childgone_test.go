package session

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// childGone is a real capture (the subagent example extension of Pi
// 1.6.0 running one scout) as a tool that persists its children's
// sessions writes it, once the child's file is gone: the results entry
// names the child's file, holds its summed usage, and no messages.
func childGone(t *testing.T, dir string) []byte {
	t.Helper()
	var out []byte
	for _, line := range strings.SplitAfter(string(readCapture(t, "pi-1.6.0", "subagent-single.jsonl")), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil {
			if m, _ := e["message"].(map[string]any); m != nil && m["role"] == "toolResult" {
				d := m["details"].(map[string]any)
				for _, r := range d["results"].([]any) {
					r := r.(map[string]any)
					delete(r, "messages")
					r["sessionFile"] = filepath.Join(dir, "2026-12-01T10-00-00-000Z_gone.jsonl")
				}
				b, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				line = string(b) + "\n"
			}
		}
		out = append(out, line...)
	}
	return out
}

// A subagent whose child session file is missing counts by the summed
// usage its result entry holds: a nested run marked as such, whose cost
// is in the root's pi.cost.total as when its messages were there.
func TestChildSessionFileGone(t *testing.T) {
	full := runs(t, traceBytes(t, readCapture(t, "pi-1.6.0", "subagent-single.jsonl"), Config{}), 1)[0]
	gone := runs(t, traceBytes(t, childGone(t, t.TempDir()), Config{ChildSessions: nested.ReadSessionFile(nested.DefaultLimits.MaxBytes)}), 1)[0]

	for _, key := range []attribute.Key{vocab.CostTotalKey, vocab.NestedCostTotalKey} {
		want, _ := full.attr(string(key))
		got, _ := gone.attr(string(key))
		if math.Abs(got.AsFloat64()-want.AsFloat64()) > 1e-12 || want.AsFloat64() == 0 {
			t.Errorf("root %s = %v, want %v (the child's messages there)", key, got.AsFloat64(), want.AsFloat64())
		}
	}
	for _, key := range []string{string(vocab.GenAIUsageInputTokensKey), string(vocab.GenAIUsageOutputTokensKey), string(vocab.NestedRunsKey)} {
		want, _ := full.attr(key)
		got, _ := gone.attr(key)
		if got.AsInt64() != want.AsInt64() {
			t.Errorf("root %s = %d, want %d", key, got.AsInt64(), want.AsInt64())
		}
	}
	if d, ok := gone.attr(string(vocab.NestedDroppedKey)); ok {
		t.Errorf("root pi.nested.dropped = %d: the child's spend is known", d.AsInt64())
	}
	agents := gone.find("invoke_agent scout")
	if len(agents) != 1 {
		t.Fatalf("%d invoke_agent scout spans, want 1:\n%s", len(agents), gone.shape())
	}
	a := agents[0]
	if a.str(string(vocab.NestedUsageFromKey)) != vocab.NestedUsageFromSummary || len(a.children) != 0 {
		t.Errorf("the child's span: %v, %d children; want pi.nested.usage_from=summary and none", a.s.Attributes(), len(a.children))
	}
	if c, _ := a.attr(string(vocab.CostTotalKey)); math.Abs(c.AsFloat64()-0.005601) > 1e-12 {
		t.Errorf("the child's pi.cost.total %v, want the entry's 0.005601", c.AsFloat64())
	}
	// Its messages there, the summary plays no part.
	for _, a := range full.find("invoke_agent scout") {
		if _, ok := a.attr(string(vocab.NestedUsageFromKey)); ok {
			t.Errorf("a child read from its messages is marked %s", vocab.NestedUsageFromKey)
		}
	}
}
