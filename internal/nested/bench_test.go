package nested_test

import (
	"bytes"
	"testing"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
	"github.com/pi-otel/pi-otel/internal/testutil/benchutil"
)

// BenchmarkParse reads the subagent results of a generated session, each
// carrying two children's runs, as the session reader hands them over:
// the walker alone, without the session file's decoding around it.
func BenchmarkParse(b *testing.B) {
	var buf bytes.Buffer
	if _, err := sessiongen.Write(&buf, sessiongen.Config{Size: 4e6, Seed: 1, Subagents: true}); err != nil {
		b.Fatal(err)
	}
	var results [][]byte
	size := 0
	for line := range bytes.Lines(buf.Bytes()) {
		event.Members(bytes.TrimSpace(line), func(k, v []byte) bool {
			if string(k) == "message" && bytes.Contains(v, []byte(`"role":"toolResult"`)) {
				results = append(results, v)
				size += len(v)
			}
			return true
		})
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	benchutil.Loop(b, func() {
		for _, r := range results {
			if nested.ParseWith(r, nested.DefaultLimits, nil, nested.Origin{}) == nil {
				b.Fatal("no runs")
			}
		}
	})
}
