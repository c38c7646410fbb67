package event_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/testutil/benchutil"
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

// An op decodes one record; newOp makes one, so that each benchmark gets
// a fresh Decoder.
type newOp func() func(rec []byte) error

func decodeOp() func([]byte) error {
	return func(rec []byte) error {
		_, err := event.Decode(rec, event.Options{})
		return err
	}
}

func decoderOp() func([]byte) error {
	d := event.NewDecoder(event.Options{})
	return func(rec []byte) error {
		_, err := d.Decode(rec)
		return err
	}
}

// decoderCallsOp is decoderOp reading bash calls too, as run and rpc do
// with --propagation call.
func decoderCallsOp() func([]byte) error {
	d := event.NewDecoder(event.Options{BashCalls: true})
	return func(rec []byte) error {
		_, err := d.Decode(rec)
		return err
	}
}

func peekOp() func([]byte) error {
	return func(rec []byte) error {
		_, err := event.Peek(rec)
		return err
	}
}

// eachSample runs an op on each sample as a sub-benchmark.
func eachSample(b *testing.B, newOp newOp) {
	for _, s := range samples() {
		b.Run(s.kind, func(b *testing.B) {
			op := newOp()
			b.SetBytes(int64(len(s.rec)))
			b.ReportAllocs()
			benchutil.Loop(b, func() {
				if err := op(s.rec); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

func BenchmarkDecode(b *testing.B) { eachSample(b, decodeOp) }

// BenchmarkDecoder is what ingest does: one Decoder, reused. Decoding the
// same record over and over, it also shows the best case of the Decoder
// remembering a repeated usage object.
func BenchmarkDecoder(b *testing.B) { eachSample(b, decoderOp) }

func BenchmarkPeek(b *testing.B) { eachSample(b, peekOp) }

// BenchmarkDecodeStream decodes every record of the realistic mix, with
// Decode and with one reused Decoder, without and with bash calls.
func BenchmarkDecodeStream(b *testing.B) {
	data, recs := streamgen.BenchStream()
	for _, tc := range []struct {
		name  string
		newOp newOp
	}{{"Decode", decodeOp}, {"Decoder", decoderOp}, {"Decoder+calls", decoderCallsOp}} {
		b.Run(tc.name, func(b *testing.B) {
			op := tc.newOp()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			benchutil.Loop(b, func() {
				for _, r := range recs {
					if err := op(r); err != nil {
						b.Fatal(err)
					}
				}
			})
			benchutil.ReportPerRecord(b, len(recs))
		})
	}
}
