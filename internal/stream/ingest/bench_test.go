package ingest_test

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/testutil/benchutil"
	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
)

// midMessage returns a sink whose mapper is inside an assistant message
// that has had its first delta, the state most records arrive in.
func midMessage(b *testing.B, tp trace.TracerProvider) (*ingest.Sink, map[string][]byte) {
	_, recs := streamgen.BenchStream()
	s := ingest.New(agentmap.New(tp))
	byKind := map[string][]byte{}
	first := -1
	for i, r := range recs {
		k := streamgen.Kind(r)
		if _, ok := byKind[k]; !ok {
			byKind[k] = r
		}
		if first < 0 && k == "message_update/text_delta" {
			first = i
		}
	}
	for _, r := range recs[:first+1] {
		s.Record(r)
	}
	if st := s.Stats(); st.Malformed != 0 {
		b.Fatalf("setup: %+v", st)
	}
	return s, byKind
}

// BenchmarkRecord is Sink.Record on one message_update kind after another,
// in the middle of a message: the path nearly every record takes.
func BenchmarkRecord(b *testing.B) {
	for _, k := range []string{"message_update/text_delta", "message_update/thinking_delta", "message_update/toolcall_delta", "message_update/text_end"} {
		b.Run(k, func(b *testing.B) {
			s, byKind := midMessage(b, noop.NewTracerProvider())
			rec := byKind[k]
			b.SetBytes(int64(len(rec)))
			b.ReportAllocs()
			benchutil.Loop(b, func() { s.Record(rec) })
		})
	}
}

// BenchmarkRecordStream feeds the whole realistic mix through a sink, with
// spans that go nowhere (noop) and with the SDK recording them.
func BenchmarkRecordStream(b *testing.B) {
	data, recs := streamgen.BenchStream()
	benchutil.EachTracerProvider(b, func(b *testing.B, newTP func() trace.TracerProvider) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			s := ingest.New(agentmap.New(newTP()), ingest.WithClock(ingest.NewStreamClock(time.Unix(0, 0))))
			for _, r := range recs {
				s.Record(r)
			}
		}
		benchutil.ReportPerRecord(b, len(recs))
	})
}
