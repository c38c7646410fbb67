package app

import (
	"path/filepath"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// replay takes oh-my-pi's captured stream for a stream, though a record
// of neither kind (advisor_cost_changed) follows its header, and its
// session file, title line first, for a session file: one settled run
// each, of the same cost.
func TestReplayOhMyPi(t *testing.T) {
	costs := map[string]float64{}
	for _, name := range []string{"bash-tool.stream.jsonl", "bash-tool.jsonl"} {
		out := filepath.Join(t.TempDir(), "traces.jsonl")
		code, _, errs := mainWith(nil, "replay", "--quiet", "--traces-exporter", "file", "--traces-file", out,
			repo.Path("testdata/sessions/omp-18.2.3/"+name))
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		roots := exportedRoots(t, out)
		if len(roots) != 1 {
			t.Fatalf("%s: %d roots, want 1", name, len(roots))
		}
		for _, r := range roots {
			if got := attr(r, string(vocab.EndReasonKey)).GetStringValue(); got != string(vocab.EndSettled) {
				t.Errorf("%s: end reason %q, want settled", name, got)
			}
			if got := attr(r, "gen_ai.conversation.id").GetStringValue(); got != "01a244b3-a5bf-7517-b3db-648564ce45d0" {
				t.Errorf("%s: gen_ai.conversation.id %q", name, got)
			}
			costs[name] = attr(r, string(vocab.CostTotalKey)).GetDoubleValue()
		}
	}
	if c := costs["bash-tool.jsonl"]; c == 0 || c != costs["bash-tool.stream.jsonl"] {
		t.Errorf("costs %v: want one, not zero", costs)
	}
}
