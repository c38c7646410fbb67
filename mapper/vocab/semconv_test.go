package vocab_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

func TestLatest(t *testing.T) {
	emit := func(kvs []attribute.KeyValue) string {
		s := ""
		for _, kv := range kvs {
			s += string(kv.Key) + "=" + kv.Value.String() + " "
		}
		return s
	}
	for _, tt := range []struct {
		name     string
		in, want []attribute.KeyValue
	}{
		{"chat: cache write renamed",
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("chat"), vocab.GenAIProviderNameKey.String("anthropic"), vocab.GenAIUsageCacheReadKey.Int(5), vocab.GenAIUsageCacheCreationKey.Int(7)},
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("chat"), vocab.GenAIProviderNameKey.String("anthropic"), vocab.GenAIUsageCacheReadKey.Int(5), vocab.GenAIUsageCacheWriteKey.Int(7)}},
		{"invoke_agent: no provider, no cache counts",
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("invoke_agent"), vocab.GenAIProviderNameKey.String("anthropic"), vocab.ProviderKey.String("anthropic"), vocab.GenAIUsageCacheReadKey.Int(5), vocab.GenAIUsageCacheCreationKey.Int(7), attribute.Int("gen_ai.usage.input_tokens", 9)},
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("invoke_agent"), vocab.ProviderKey.String("anthropic"), attribute.Int("gen_ai.usage.input_tokens", 9)}},
		{"chat: the thinking level is the reasoning level",
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("chat"), vocab.ThinkingLevelKey.String("high"), vocab.GenAIConversationCompactedKey.Bool(true)},
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("chat"), vocab.GenAIReasoningLevelKey.String("high"), vocab.GenAIConversationCompactedKey.Bool(true)}},
		{"chat: its cost in the proposed cost names too",
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("chat"), vocab.CostTotalKey.Float64(0.25)},
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("chat"), vocab.CostTotalKey.Float64(0.25), vocab.GenAIUsageCostAmountKey.Float64(0.25), vocab.GenAIUsageCostCurrencyKey.String("USD")}},
		{"invoke_agent: no cost names (inference spans only)",
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("invoke_agent"), vocab.CostTotalKey.Float64(0.5)},
			[]attribute.KeyValue{vocab.GenAIOperationNameKey.String("invoke_agent"), vocab.CostTotalKey.Float64(0.5)}},
		{"compaction: renamed too",
			[]attribute.KeyValue{vocab.CompactionReasonKey.String("threshold"), vocab.GenAIUsageCacheCreationKey.Int(1)},
			[]attribute.KeyValue{vocab.CompactionReasonKey.String("threshold"), vocab.GenAIUsageCacheWriteKey.Int(1)}},
	} {
		in := append([]attribute.KeyValue(nil), tt.in...)
		if got := vocab.Latest(in); emit(got) != emit(tt.want) {
			t.Errorf("%s: got %s, want %s", tt.name, emit(got), emit(tt.want))
		}
		if emit(in) != emit(tt.in) {
			t.Errorf("%s: input modified", tt.name)
		}
	}
	// The thinking level elsewhere is Pi's own (a span event of the root, for instance).
	other := []attribute.KeyValue{vocab.ThinkingLevelKey.String("low")}
	if got := vocab.Latest(other); &got[0] != &other[0] || got[0].Key != vocab.ThinkingLevelKey {
		t.Errorf("Latest rewrote a thinking level outside a chat: %v", got)
	}
	// Nothing to change: the same slice, no copy.
	same := []attribute.KeyValue{vocab.GenAIOperationNameKey.String("execute_tool"), attribute.String("gen_ai.tool.name", "bash")}
	if got := vocab.Latest(same); &got[0] != &same[0] {
		t.Error("Latest copied attributes it did not change")
	}
}

// The v1.41 metric names are the ones semconv v1.41's instruments carry.
func TestV141MetricNames(t *testing.T) {
	for _, c := range []struct{ ours, semconv string }{
		{vocab.MetricTokenUsage, genaiconv.ClientTokenUsage{}.Name()},
		{vocab.MetricOperationDuration, genaiconv.ClientOperationDuration{}.Name()},
		{vocab.MetricTimeToFirstChunk, genaiconv.ClientOperationTimeToFirstChunk{}.Name()},
		{vocab.MetricTimePerChunk, genaiconv.ClientOperationTimePerOutputChunk{}.Name()},
	} {
		if c.ours != c.semconv {
			t.Errorf("%s: semconv v1.41 calls it %s", c.ours, c.semconv)
		}
	}
}

// TestOneSemconvVersion: every Go file of the module that imports an
// OpenTelemetry semconv package imports v1.41, the version of SchemaURL, so
// the names written and the schema declared agree.
func TestOneSemconvVersion(t *testing.T) {
	const want = "go.opentelemetry.io/otel/semconv/v1.41.0"
	if !strings.HasSuffix(vocab.SchemaURL, "/1.41.0") {
		t.Fatalf("SchemaURL %s is not v1.41's", vocab.SchemaURL)
	}
	n := 0
	err := filepath.WalkDir(repo.Path("."), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, "go.opentelemetry.io/otel/semconv/") {
				continue
			}
			n++
			if p != want && !strings.HasPrefix(p, want+"/") {
				t.Errorf("%s imports %s, not %s", path, p, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no file imports semconv: the walk is blind")
	}
}
