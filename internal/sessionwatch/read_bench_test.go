package sessionwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nopTracer counts the lines it is fed and traces nothing.
type nopTracer struct{ lines int }

func (t *nopTracer) Line(int64, []byte)               { t.lines++ }
func (*nopTracer) Idle(time.Time, time.Duration) bool { return false }
func (*nopTracer) Close(bool)                         {}
func (*nopTracer) Committed() int64                   { return 0 }
func (*nopTracer) LastEntry() time.Time               { return time.Time{} }

// BenchmarkReadLines reads a file's lines as the tail of a followed file
// is read: its allocations per op do not grow with the lines.
func BenchmarkReadLines(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var content strings.Builder
			for i := range n {
				fmt.Fprintf(&content, `{"type":"message","id":"%08x","text":"%s"}`+"\n", i, strings.Repeat("z", i%400))
			}
			p := filepath.Join(b.TempDir(), "s.jsonl")
			if err := os.WriteFile(p, []byte(content.String()), 0o600); err != nil {
				b.Fatal(err)
			}
			tr := &nopTracer{}
			f := New(Config{})
			fi := &file{path: p, tr: tr}
			b.SetBytes(int64(content.Len()))
			b.ReportAllocs()
			for b.Loop() {
				fi.readOff = 0
				f.read(fi)
			}
			if tr.lines < n {
				b.Fatalf("%d lines fed, want %d a read", tr.lines, n)
			}
		})
	}
}
