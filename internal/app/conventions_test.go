package app

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// replayModes replays a real capture to span and metric files and returns
// each span's attribute keys (by span name) and the metric names.
func replayModes(t *testing.T, capture string, flags ...string) (map[string][]map[string]bool, map[string]bool) {
	t.Helper()
	dir := t.TempDir()
	spans, mets := filepath.Join(dir, "spans.jsonl"), filepath.Join(dir, "metrics.jsonl")
	replayOK(t, append(append([]string{"--traces-file", spans, "--metrics-file", mets}, flags...),
		repo.Captures("pi-1.6.0", capture+".jsonl"))...)
	// The spans' scope declares the schema of the names they carry.
	raw, err := os.ReadFile(spans)
	if err != nil {
		t.Fatal(err)
	}
	latest := slices.Contains(flags, "gen_ai_latest_experimental")
	if got := strings.Contains(string(raw), vocab.LatestSchemaURL); got != latest {
		t.Errorf("latest mode %v, yet the latest schema URL declared: %v", latest, got)
	}
	keys := map[string][]map[string]bool{}
	for _, s := range spantree.All(spantree.ReadOTLPFile(t, spans)) {
		k := map[string]bool{}
		for key := range s.Attrs {
			k[key] = true
		}
		keys[s.Name] = append(keys[s.Name], k)
	}
	names := map[string]bool{}
	for _, m := range fileMetrics(t, mets) {
		names[m.Name] = true
	}
	return keys, names
}

// TestConventionsPerMode replays real Pi 1.6.0 runs in both modes and
// checks the names that leave the process: the v1.41 ones by default, the
// latest ones only with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental.
func TestConventionsPerMode(t *testing.T) {
	const (
		cacheCreation = string(vocab.GenAIUsageCacheCreationKey)
		cacheWrite    = string(vocab.GenAIUsageCacheWriteKey)
		cacheRead     = string(vocab.GenAIUsageCacheReadKey)
		provider      = string(vocab.GenAIProviderNameKey)
	)
	v141 := []string{vocab.MetricTokenUsage, vocab.MetricOperationDuration}
	latest := []string{vocab.MetricInferenceDuration, vocab.MetricUsageInputTokens, vocab.MetricUsageOutputTokens,
		vocab.MetricUsageCacheReadTokens, vocab.MetricUsageCacheWriteTokens, vocab.MetricOperationInputTokens,
		vocab.MetricOperationOutputTokens, vocab.MetricInvokeAgentDuration, vocab.MetricInvokeAgentInferences,
		vocab.MetricInvokeAgentToolCalls, vocab.MetricExecuteToolDuration}
	for _, capture := range []string{"bash-tool", "retry-529", "threshold-compaction"} {
		for _, mode := range []string{"v1.41", "latest"} {
			t.Run(capture+"/"+mode, func(t *testing.T) {
				var flags []string
				if mode == "latest" {
					flags = []string{"--semconv-stability-opt-in", "gen_ai_latest_experimental"}
				}
				spans, names := replayModes(t, capture, flags...)
				chats := 0
				for name, all := range spans {
					for _, k := range all {
						switch {
						case name == vocab.SpanRoot && mode == "latest":
							if k[provider] || k[cacheRead] || k[cacheCreation] || k[cacheWrite] || !k[string(vocab.ProviderKey)] {
								t.Errorf("latest invoke_agent keys %v", k)
							}
						case name == vocab.SpanRoot:
							if !k[provider] || !k[cacheRead] || !k[cacheCreation] {
								t.Errorf("v1.41 invoke_agent keys %v", k)
							}
						case vocab.SpanChat.Prefix() == name[:min(len(name), 5)]:
							chats++
							// A compaction's summary call has no thinking level in Pi's records.
							reasoning, thinking := k[string(vocab.GenAIReasoningLevelKey)], k[string(vocab.ThinkingLevelKey)]
							if k[string(vocab.CompactionSummaryCallKey)] {
								reasoning, thinking = mode == "latest", mode == "v1.41"
							}
							cost := k[string(vocab.GenAIUsageCostAmountKey)] && k[string(vocab.GenAIUsageCostCurrencyKey)]
							if mode == "latest" && (k[cacheCreation] || !k[cacheWrite] || !reasoning || thinking || !cost) ||
								mode == "v1.41" && (!k[cacheCreation] || k[cacheWrite] || reasoning || !thinking || cost) {
								t.Errorf("%s chat keys %v", mode, k)
							}
						default:
							if k[cacheCreation] && mode == "latest" || k[cacheWrite] && mode == "v1.41" {
								t.Errorf("%s %s keys %v", mode, name, k)
							}
						}
					}
				}
				if chats == 0 || len(spans[vocab.SpanRoot]) == 0 {
					t.Fatalf("no chat or root span: %v", spans)
				}
				want, not := v141, latest
				if mode == "latest" {
					want, not = latest, v141
				}
				for _, n := range want {
					if n == vocab.MetricExecuteToolDuration && capture == "retry-529" {
						continue // no tool in that run
					}
					if !names[n] {
						t.Errorf("%s: no metric %s (have %v)", mode, n, slices.Sorted(maps.Keys(names)))
					}
				}
				for _, n := range not {
					if names[n] {
						t.Errorf("%s: metric %s of the other mode", mode, n)
					}
				}
				if !names[vocab.MetricRuns] || !names[vocab.MetricCost] {
					t.Errorf("%s: pi.* metrics missing: %v", mode, names)
				}
			})
		}
	}
}
