package session

import (
	"bytes"
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// BenchmarkTraceHistory traces a generated 32 MB session file, with the SDK
// recording (and dropping) every span: a plain history, and one whose every
// tool call is a subagent call carrying two children's runs (compare their
// MB/s: nested results must not slow an import much).
func BenchmarkTraceHistory(b *testing.B) {
	for _, c := range []struct {
		name string
		subs bool
	}{{"plain", false}, {"subagents", true}} {
		b.Run(c.name, func(b *testing.B) {
			var buf bytes.Buffer
			if _, err := sessiongen.Write(&buf, sessiongen.Config{Size: 32e6, Seed: 1, Subagents: c.subs}); err != nil {
				b.Fatal(err)
			}
			in := buf.Bytes()
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			spans := 0
			for b.Loop() {
				ids := spanid.NewGenerator(nil)
				rec := &countSpans{}
				tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(ids), sdktrace.WithSpanProcessor(rec))
				tr := New(Config{TracerProvider: tp})
				feed(tr, in)
				tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
				spans = rec.n
			}
			b.ReportMetric(float64(spans), "spans/op")
		})
	}
}

// countSpans counts the spans that end.
type countSpans struct{ n int }

func (c *countSpans) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c *countSpans) OnEnd(sdktrace.ReadOnlySpan)                     { c.n++ }
func (c *countSpans) Shutdown(context.Context) error                  { return nil }
func (c *countSpans) ForceFlush(context.Context) error                { return nil }
