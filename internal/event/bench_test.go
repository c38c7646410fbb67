package event_test

import (
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
)

// sample is one record of a kind: the one of median length, so that a
// kind's benchmark is typical of it, plus the largest tool output.
type sample struct {
	kind string
	rec  []byte
}

var samples = sync.OnceValue(func() []sample {
	_, recs := streamgen.BenchStream()
	byKind := map[string][][]byte{}
	for _, r := range recs {
		k := streamgen.Kind(r)
		byKind[k] = append(byKind[k], r)
	}
	var out []sample
	for _, k := range []string{
		"message_update/text_delta", "message_update/thinking_delta", "message_update/toolcall_delta",
		"message_update/text_end", "message_start", "message_end", "turn_end", "agent_end",
		"tool_execution_update", "tool_execution_end", "agent_start", "agent_settled",
	} {
		rs := byKind[k]
		if len(rs) == 0 {
			continue
		}
		rs = slices.Clone(rs)
		slices.SortFunc(rs, func(a, b []byte) int { return len(a) - len(b) })
		out = append(out, sample{k, rs[len(rs)/2]})
		if k == "tool_execution_end" {
			out = append(out, sample{k + "/largest", rs[len(rs)-1]})
		}
	}
	return out
})

// cpuTime is the CPU time the process has used. Benchmarks report it per
// operation as cpu-ns/op next to ns/op: on a busy machine wall time
// includes waiting for a core, CPU time much less so.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs body b.N times and reports the CPU time per iteration too.
func loop(b *testing.B, body func()) {
	start := cpuTime()
	for b.Loop() {
		body()
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkDecode(b *testing.B) {
	for _, s := range samples() {
		b.Run(s.kind, func(b *testing.B) {
			b.SetBytes(int64(len(s.rec)))
			b.ReportAllocs()
			loop(b, func() {
				if _, err := event.Decode(s.rec, event.Options{}); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkDecoder is what ingest does: one Decoder, reused. Decoding the
// same record over and over, it also shows the best case of the Decoder
// remembering a repeated usage object.
func BenchmarkDecoder(b *testing.B) {
	for _, s := range samples() {
		b.Run(s.kind, func(b *testing.B) {
			d := event.NewDecoder(event.Options{})
			b.SetBytes(int64(len(s.rec)))
			b.ReportAllocs()
			loop(b, func() {
				if _, err := d.Decode(s.rec); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func BenchmarkPeek(b *testing.B) {
	for _, s := range samples() {
		b.Run(s.kind, func(b *testing.B) {
			b.SetBytes(int64(len(s.rec)))
			b.ReportAllocs()
			loop(b, func() {
				if _, err := event.Peek(s.rec); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkDecodeStream decodes every record of the realistic mix, with
// Decode and with one reused Decoder.
func BenchmarkDecodeStream(b *testing.B) {
	data, recs := streamgen.BenchStream()
	b.Run("Decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		loop(b, func() {
			for _, r := range recs {
				if _, err := event.Decode(r, event.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
	})
	b.Run("Decoder", func(b *testing.B) {
		d := event.NewDecoder(event.Options{})
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		loop(b, func() {
			for _, r := range recs {
				if _, err := d.Decode(r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(recs)), "ns/record")
	})
}
