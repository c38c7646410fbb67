package piconv_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pi-otel/pi-otel/mapper/piconv"
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
			[]attribute.KeyValue{piconv.OperationNameKey.String("chat"), piconv.ProviderNameKey.String("anthropic"), piconv.UsageCacheReadKey.Int(5), piconv.UsageCacheCreationKey.Int(7)},
			[]attribute.KeyValue{piconv.OperationNameKey.String("chat"), piconv.ProviderNameKey.String("anthropic"), piconv.UsageCacheReadKey.Int(5), piconv.UsageCacheWriteKey.Int(7)}},
		{"invoke_agent: no provider, no cache counts",
			[]attribute.KeyValue{piconv.OperationNameKey.String("invoke_agent"), piconv.ProviderNameKey.String("anthropic"), piconv.ProviderKey.String("anthropic"), piconv.UsageCacheReadKey.Int(5), piconv.UsageCacheCreationKey.Int(7), attribute.Int("gen_ai.usage.input_tokens", 9)},
			[]attribute.KeyValue{piconv.OperationNameKey.String("invoke_agent"), piconv.ProviderKey.String("anthropic"), attribute.Int("gen_ai.usage.input_tokens", 9)}},
		{"chat: the thinking level is the reasoning level",
			[]attribute.KeyValue{piconv.OperationNameKey.String("chat"), piconv.ThinkingLevelKey.String("high"), piconv.ConversationCompactedKey.Bool(true)},
			[]attribute.KeyValue{piconv.OperationNameKey.String("chat"), piconv.ReasoningLevelKey.String("high"), piconv.ConversationCompactedKey.Bool(true)}},
		{"compaction: renamed too",
			[]attribute.KeyValue{piconv.CompactionReasonKey.String("threshold"), piconv.UsageCacheCreationKey.Int(1)},
			[]attribute.KeyValue{piconv.CompactionReasonKey.String("threshold"), piconv.UsageCacheWriteKey.Int(1)}},
	} {
		in := append([]attribute.KeyValue(nil), tt.in...)
		if got := piconv.Latest(in); emit(got) != emit(tt.want) {
			t.Errorf("%s: got %s, want %s", tt.name, emit(got), emit(tt.want))
		}
		if emit(in) != emit(tt.in) {
			t.Errorf("%s: input modified", tt.name)
		}
	}
	// The thinking level elsewhere is Pi's own (a span event of the root, for instance).
	other := []attribute.KeyValue{piconv.ThinkingLevelKey.String("low")}
	if got := piconv.Latest(other); &got[0] != &other[0] || got[0].Key != piconv.ThinkingLevelKey {
		t.Errorf("Latest rewrote a thinking level outside a chat: %v", got)
	}
	// Nothing to change: the same slice, no copy.
	same := []attribute.KeyValue{piconv.OperationNameKey.String("execute_tool"), attribute.String("gen_ai.tool.name", "bash")}
	if got := piconv.Latest(same); &got[0] != &same[0] {
		t.Error("Latest copied attributes it did not change")
	}
}
