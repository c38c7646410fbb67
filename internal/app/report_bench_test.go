package app

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
)

// BenchmarkReport times pi-otel report --json over real-shaped histories
// (generated sessions of sizes spread as real ones are, a median of about
// 100 KB and a few of megabytes, plus the real captures), one per size:
// the whole command, as a user runs it, from the walk of the folder to
// the JSON. ccusage 20.0.24 took 0.4-0.7 s for 452 real session files on
// a loaded 2-core machine.
func BenchmarkReport(b *testing.B) {
	for _, h := range []struct {
		files int
		bytes int64
	}{{452, 50 << 20}, {452, 200 << 20}, {3000, 600 << 20}} {
		b.Run(fmt.Sprintf("%d-files-%dMB", h.files, h.bytes>>20), func(b *testing.B) {
			hist := historytest.Write(b, h.files, h.bytes)
			b.SetBytes(hist.Bytes)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				code := Main(b.Context(), Env{Args: []string{"report", "--json", hist.Dir}, Stdin: strings.NewReader(""),
					Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }})
				if code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
			per := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(per.Seconds(), "s/history")
			b.ReportMetric(float64(len(hist.Paths))/per.Seconds(), "files/s")
			b.Logf("%d files, %.1f MB: %s a report, %.0f files/s", len(hist.Paths), float64(hist.Bytes)/1e6,
				per.Round(time.Millisecond), float64(len(hist.Paths))/per.Seconds())
		})
	}
}
