package rpc_test

import (
	"bytes"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/testutil/benchutil"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
)

// The cost of tracing one recorded session through the tracker, against
// feeding Pi's records alone to the json-mode sink: the difference is what
// RPC tracing adds per record.

func benchLines(b *testing.B) []rpctest.Line {
	b.Helper()
	lines, err := loadTranscript("steer-follow-up")
	if err != nil {
		b.Fatal(err)
	}
	return lines
}

func BenchmarkTrackerSession(b *testing.B) {
	lines := benchLines(b)
	tp := sdktrace.NewTracerProvider()
	b.ReportAllocs()
	for b.Loop() {
		tr := rpc.New(agentmap.New(tp), tp)
		at := time.Now()
		for _, l := range lines {
			raw := bytes.TrimSuffix(l.Raw, []byte{'\r'})
			if l.Dir == rpctest.In {
				tr.FromController(raw, at)
			} else {
				tr.FromPi(raw, at)
			}
		}
		tr.Close(exit0, at)
	}
	benchutil.ReportPerRecord(b, len(lines))
}

func BenchmarkSinkSession(b *testing.B) {
	lines := benchLines(b)
	tp := sdktrace.NewTracerProvider()
	b.ReportAllocs()
	for b.Loop() {
		m := agentmap.New(tp)
		s := ingest.New(m)
		for _, l := range lines {
			if l.Dir == rpctest.Out {
				s.Record(l.Raw)
			}
		}
		m.Close(exit0, time.Now())
	}
	benchutil.ReportPerRecord(b, len(lines))
}
