package telemetry

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

const testKey = "sk-ant-api03-" + "abcdefghijklmnopqrstuvwx"

// Every string a span carries passes through the redactor on its way to
// the processors: its name, its attributes (strings and each string of a
// slice), its events' and its links' attributes, under any key. Ids and
// captured content are left as they are, and the SDK's own span is not
// written to.
func TestScrubbingReachesEveryString(t *testing.T) {
	scrubbed, raw := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(scrubbing{procs: []sdktrace.SpanProcessor{scrubbed}, n: newNameScrubber(nil)}),
		sdktrace.WithSpanProcessor(raw))
	key := func(tag string) string { return tag + "-" + testKey }
	_, s := tp.Tracer("t").Start(context.Background(), "chat "+key("name"),
		trace.WithLinks(trace.Link{
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: [16]byte{1}, SpanID: [8]byte{1}}),
			Attributes:  []attribute.KeyValue{attribute.String("link.attr", key("link"))},
		}))
	s.SetAttributes(
		vocab.GenAIRequestModelKey.String(key("model")),
		attribute.String("a.key.added.later", key("later")),
		vocab.GenAIResponseFinishReasonsKey.StringSlice([]string{"stop", key("slice")}),
		vocab.GenAIToolCallIDKey.String(key("id")),
		vocab.GenAIInputMessagesKey.String(key("content")),
		vocab.OutcomeKey.String("ok"),
		vocab.TurnsKey.Int(3),
	)
	s.AddEvent(vocab.EventModelChange, trace.WithAttributes(
		vocab.GenAIProviderNameKey.String(key("provider")), vocab.GenAIRequestModelKey.String(key("evmodel"))))
	s.AddEvent(vocab.EventUsage, trace.WithAttributes(vocab.UsageKindKey.String(key("kind")), vocab.CostTotalKey.Float64(1)))
	s.End()

	got := scrubbed.Ended()
	if len(got) != 1 {
		t.Fatalf("%d spans", len(got))
	}
	all := dump(got[0])
	for _, tag := range []string{"name", "link", "model", "later", "slice", "provider", "evmodel", "kind"} {
		if !strings.Contains(all, tag+"-[REDACTED:anthropic-key]") {
			t.Errorf("%s not scrubbed: %s", tag, all)
		}
	}
	for _, tag := range []string{"id", "content"} {
		if !strings.Contains(all, key(tag)) {
			t.Errorf("%s scrubbed, but it is no name: %s", tag, all)
		}
	}
	for _, want := range []string{"pi.outcome=ok", "pi.turns=3", "pi.cost.total=1", `["stop",`} {
		if !strings.Contains(all, want) {
			t.Errorf("%s lost: %s", want, all)
		}
	}
	// The processors beside the scrubbing one see the span as it was made.
	if r := dump(raw.Ended()[0]); strings.Contains(r, "REDACTED") {
		t.Errorf("the SDK's span was written to: %s", r)
	}
}

// A span without a name to scrub goes on as it is, not copied.
func TestScrubbingLeavesCleanSpans(t *testing.T) {
	raw, rec := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(raw),
		sdktrace.WithSpanProcessor(scrubbing{procs: []sdktrace.SpanProcessor{rec}, n: newNameScrubber(nil)}))
	_, s := tp.Tracer("t").Start(context.Background(), "chat m")
	s.SetAttributes(vocab.GenAIRequestModelKey.String("m"))
	s.AddEvent(vocab.EventUsage, trace.WithAttributes(vocab.UsageKindKey.String("compaction")))
	s.End()
	if rec.Ended()[0] != raw.Ended()[0] {
		t.Errorf("a clean span was copied: %T", rec.Ended()[0])
	}
}

// The user's --redact patterns apply to names in events too.
func TestScrubbingUsesTheUserPatterns(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(scrubbing{procs: []sdktrace.SpanProcessor{rec}, n: newNameScrubber([]string{"codename-[a-z]+"})}))
	_, s := tp.Tracer("t").Start(context.Background(), vocab.SpanRoot)
	s.AddEvent(vocab.EventModelChange, trace.WithAttributes(vocab.GenAIRequestModelKey.String("acme-codename-orion")))
	s.End()
	if got := dump(rec.Ended()[0]); !strings.Contains(got, "acme-[REDACTED:custom]") || strings.Contains(got, "orion") {
		t.Errorf("the user's pattern did not apply: %s", got)
	}
}

// A memo full of long strings does not keep more: names that do not
// repeat (a long description each time) cost memory only up to the bound.
func TestScrubMemoIsBounded(t *testing.T) {
	n := newNameScrubber(nil)
	long := strings.Repeat("x", 64<<10)
	for i := range 64 {
		n.scrub(fmt.Sprint(i, long))
	}
	if n.bytes > maxNameBytesCached {
		t.Errorf("memo holds %d bytes, bound %d", n.bytes, maxNameBytesCached)
	}
	if got := n.scrub("k " + testKey); got != "k [REDACTED:anthropic-key]" {
		t.Errorf("past the bound: %q", got)
	}
}

// dump renders what a processor can read of a span, as one string.
func dump(s sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	b.WriteString(s.Name())
	kvs := func(kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.String())
		}
	}
	kvs(s.Attributes())
	for _, e := range s.Events() {
		b.WriteString(" | " + e.Name)
		kvs(e.Attributes)
	}
	for _, l := range s.Links() {
		b.WriteString(" | link")
		kvs(l.Attributes)
	}
	return b.String()
}
