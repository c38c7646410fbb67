package app

import (
	"path/filepath"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// chunkValues is how many values the time-per-output-chunk histogram of
// either mode holds in a --metrics-file, and whether it is there at all.
func chunkValues(t *testing.T, path string) (uint64, bool) {
	t.Helper()
	var n uint64
	found := false
	for _, m := range fileMetrics(t, path) {
		if m.Name != vocab.MetricTimePerChunk && m.Name != vocab.MetricInferencePerChunk {
			continue
		}
		found = true
		for _, p := range m.GetHistogram().GetDataPoints() {
			n += p.GetCount()
		}
	}
	return n, found
}

// TestChunkTimesOnlyLive: `run` records a value per output chunk after
// each call's first, from the records' arrival; a replay of the same
// stream, whose times are rebuilt, and a session file, which has no
// chunks, record none. bash-tool has two calls: 4 tool-call deltas and 2
// text deltas, so 3 + 1 gaps.
func TestChunkTimesOnlyLive(t *testing.T) {
	stream := repo.Captures("pi-1.6.0", "bash-tool.jsonl")
	for _, mode := range []string{"v1.41", "latest"} {
		t.Run(mode, func(t *testing.T) {
			var flags []string
			if mode == "latest" {
				flags = []string{"--semconv-stability-opt-in", "gen_ai_latest_experimental"}
			}
			dir := t.TempDir()
			live := filepath.Join(dir, "live.jsonl")
			args := append([]string{"run", "--traces-exporter", "none", "--metrics-file", live}, flags...)
			if code, _, stderr := mainWith(nil, append(args, "--", "cat", stream)...); code != 0 {
				t.Fatalf("run: exit %d: %s", code, stderr)
			}
			if n, _ := chunkValues(t, live); n != 4 {
				t.Errorf("run recorded %d chunk gaps, want 4", n)
			}
			for _, in := range []string{stream, repo.Path("testdata/sessions/pi-1.6.0/bash-tool.jsonl")} {
				out := filepath.Join(t.TempDir(), "replay.jsonl")
				replayOK(t, append(append([]string{"--traces-exporter", "none", "--metrics-file", out}, flags...), in)...)
				if n, found := chunkValues(t, out); found {
					t.Errorf("replay of %s recorded %d chunk gaps from times it rebuilt", filepath.Base(in), n)
				}
			}
		})
	}
}
