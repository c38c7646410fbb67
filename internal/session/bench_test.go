package session

import (
	"bytes"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// BenchmarkTraceHistory traces a generated 32 MB session file, with the SDK
// recording (and dropping) every span.
func BenchmarkTraceHistory(b *testing.B) {
	var buf bytes.Buffer
	if _, err := sessiongen.Write(&buf, sessiongen.Config{Size: 32e6, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		ids := &IDs{}
		tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(ids))
		tr := New(Config{TracerProvider: tp, IDs: ids})
		feed(tr, in)
		tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
	}
}
