package framing_test

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"testing"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
	"github.com/pi-otel/pi-otel/internal/testutil/benchutil"
)

// mix is a realistic Pi stream: mostly ~250-byte records (150–350 bytes)
// with a 1 MB record after every 10,000 of them, CRLF now and then.
var mix = sync.OnceValues(func() ([]byte, int) {
	var b bytes.Buffer
	records := 0
	seed := uint32(1)
	for block := range 4 {
		for i := range 10000 {
			seed = seed*1664525 + 1013904223
			n := 150 + int(seed>>16)%201
			line := `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"`
			b.WriteString(line)
			b.Write(bytes.Repeat([]byte{'a' + byte(i%26)}, max(1, n-len(line)-4)))
			b.WriteString(`"}}`)
			if i%97 == 0 {
				b.WriteByte('\r')
			}
			b.WriteByte('\n')
			records++
		}
		b.WriteString(`{"type":"tool_execution_end","result":"` + strconv.Itoa(block))
		b.Write(bytes.Repeat([]byte("x\u2028y"), (1<<20)/5))
		b.WriteString("\"}\n")
		records++
	}
	return b.Bytes(), records
})

func TestMixIsRealistic(t *testing.T) {
	data, records := mix()
	var c collector
	st, err := framing.Forward(io.Discard, bytes.NewReader(data), c.emit)
	if err != nil || st.Records != int64(records) || st.LargestRecord < 1<<20 {
		t.Fatalf("mix: %v, Stats %+v, want %d records, largest over 1 MiB", err, st, records)
	}
}

// The tests below count allocations; they assert no timing.

func TestSplitterSteadyStateAllocatesNothing(t *testing.T) {
	data, _ := mix()
	s := framing.NewSplitter(func([]byte) {})
	feed := func() {
		for p := data; len(p) > 0; {
			n := min(64<<10, len(p))
			s.Write(p[:n])
			p = p[n:]
		}
	}
	feed() // the carry buffer grows to the largest record once
	if a := testing.AllocsPerRun(3, feed); a != 0 {
		t.Fatalf("Splitter allocates %.1f times per %d-byte stream in steady state, want 0", a, len(data))
	}
}

func TestForwardAllocationsDoNotGrowWithRecords(t *testing.T) {
	data, _ := mix()
	four := bytes.Repeat(data, 4)
	run := func(in []byte) float64 {
		return testing.AllocsPerRun(3, func() {
			if _, err := framing.Forward(io.Discard, bytes.NewReader(in), func([]byte) {}); err != nil {
				t.Fatal(err)
			}
		})
	}
	one, many := run(data), run(four)
	if many != one {
		t.Fatalf("Forward allocates %.0f times for the mix and %.0f for four times as many records; want a per-call constant", one, many)
	}
	t.Logf("Forward allocations per call: %.0f (read buffer and the carry buffer growing to 1 MB)", one)
}

func TestReaderAllocationsDoNotGrowWithRecords(t *testing.T) {
	data, _ := mix()
	four := bytes.Repeat(data, 4)
	run := func(in []byte) float64 {
		return testing.AllocsPerRun(3, func() {
			r := framing.NewReader(bytes.NewReader(in))
			for {
				if _, err := r.Next(); err != nil {
					return
				}
			}
		})
	}
	if one, many := run(data), run(four); many != one {
		t.Fatalf("Reader allocates %.0f times for the mix and %.0f for four times as many records", one, many)
	}
}

func reportRecords(b *testing.B, records int) {
	benchutil.ReportPerRecord(b, records)
}

func BenchmarkSplitter(b *testing.B) {
	data, records := mix()
	var total int
	s := framing.NewSplitter(func(rec []byte) { total += len(rec) })
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for p := data; len(p) > 0; {
			n := min(64<<10, len(p))
			s.Write(p[:n])
			p = p[n:]
		}
	}
	reportRecords(b, records)
}

func BenchmarkForward(b *testing.B) {
	data, records := mix()
	var total int
	src := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(data)
		if _, err := framing.Forward(io.Discard, src, func(rec []byte) { total += len(rec) }); err != nil {
			b.Fatal(err)
		}
	}
	reportRecords(b, records)
}

func BenchmarkReader(b *testing.B) {
	data, records := mix()
	src := bytes.NewReader(data)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(data)
		r := framing.NewReader(src)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
	reportRecords(b, records)
}
