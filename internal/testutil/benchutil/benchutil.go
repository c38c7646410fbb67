// Package benchutil is what the pipeline's benchmarks (event, mapper,
// ingest) share: CPU time per operation, a per-record rate, and the tracer
// providers the mapping benchmarks run with.
package benchutil

import (
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// CPUTime is the CPU time the process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Loop runs body b.N times and reports the CPU time per iteration as
// cpu-ns/op next to ns/op: on a busy machine wall time includes waiting
// for a core, CPU time much less so.
func Loop(b *testing.B, body func()) {
	start := CPUTime()
	for b.Loop() {
		body()
	}
	b.ReportMetric(float64(CPUTime()-start)/float64(b.N), "cpu-ns/op")
}

// ReportPerRecord reports ns/record for a benchmark whose every iteration
// handles n records.
func ReportPerRecord(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/record")
}

// EachTracerProvider runs bench as a sub-benchmark with spans that go
// nowhere (noop: the code's own cost) and with the SDK recording spans and
// dropping them (what replay with --traces-exporter none does). newTP makes
// a fresh provider.
func EachTracerProvider(b *testing.B, bench func(b *testing.B, newTP func() trace.TracerProvider)) {
	for _, tc := range []struct {
		name  string
		newTP func() trace.TracerProvider
	}{
		{"noop", func() trace.TracerProvider { return noop.NewTracerProvider() }},
		{"sdk", func() trace.TracerProvider { return sdktrace.NewTracerProvider() }},
	} {
		b.Run(tc.name, func(b *testing.B) { bench(b, tc.newTP) })
	}
}
