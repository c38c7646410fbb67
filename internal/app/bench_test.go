package app_test

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
	"github.com/pi-otel/pi-otel/internal/testutil/benchutil"
	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
)

// benchStream writes a realistic generated stream to a file once.
var benchStream = sync.OnceValues(func() (string, int64) {
	dir, err := os.MkdirTemp("", "pi-otel-bench-")
	if err != nil {
		panic(err)
	}
	name := filepath.Join(dir, "stream.jsonl")
	f, err := os.Create(name)
	if err != nil {
		panic(err)
	}
	st, err := streamgen.Write(f, 64<<20)
	if err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
	return name, st.Bytes
})

// BenchmarkReplay is `pi-otel replay` end to end, in process, with each
// trace exporter that needs no collector. scripts/bench.sh measures the
// binary; this is the one to profile (-cpuprofile, -memprofile).
func BenchmarkReplay(b *testing.B) {
	name, size := benchStream()
	b.Cleanup(func() { os.RemoveAll(filepath.Dir(name)) })
	for _, exp := range []struct {
		name string
		args []string
	}{
		{"none", []string{"--traces-exporter", "none"}},
		{"file", []string{"--traces-exporter", "file", "--traces-file", os.DevNull}},
		// Pi's events as log records too, and the latest conventions' renaming and metrics.
		{"file+logs", []string{"--traces-exporter", "file", "--traces-file", os.DevNull, "--logs-file", os.DevNull}},
		{"file+latest", []string{"--traces-exporter", "file", "--traces-file", os.DevNull, "--semconv-stability-opt-in", "gen_ai_latest_experimental"}},
	} {
		b.Run(exp.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			start := benchutil.CPUTime()
			defer func() {
				// Throughput per CPU second: steadier than wall time when
				// other work shares the machine.
				b.ReportMetric(float64(size)*float64(b.N)/1e6/(benchutil.CPUTime()-start).Seconds(), "MB/cpu-s")
			}()
			for b.Loop() {
				args := append([]string{"replay", "--quiet"}, exp.args...)
				code := app.Main(b.Context(), app.Env{
					Args:   append(args, name),
					Stdout: io.Discard,
					Stderr: io.Discard,
					Getenv: func(string) string { return "" },
				})
				if code != 0 {
					b.Fatalf("replay exited %d", code)
				}
			}
		})
	}
}

// BenchmarkReplaySession is `pi-otel replay` of a generated 32 MB session
// file (a history, as watch --since all reads it): a megabyte of session
// file makes far more spans than a megabyte of event stream, so this is
// the one to profile for a backfill's exporter and translator.
func BenchmarkReplaySession(b *testing.B) {
	dir := b.TempDir()
	name := filepath.Join(dir, "session.jsonl")
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sessiongen.Write(f, sessiongen.Config{Size: 32e6, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(name)
	if err != nil {
		b.Fatal(err)
	}
	for _, exp := range []struct {
		name string
		args []string
	}{
		{"none", []string{"--traces-exporter", "none"}},
		{"file", []string{"--traces-exporter", "file", "--traces-file", os.DevNull}},
	} {
		b.Run(exp.name, func(b *testing.B) {
			b.SetBytes(fi.Size())
			b.ReportAllocs()
			start := benchutil.CPUTime()
			defer func() {
				b.ReportMetric(float64(fi.Size())*float64(b.N)/1e6/(benchutil.CPUTime()-start).Seconds(), "MB/cpu-s")
			}()
			for b.Loop() {
				args := append([]string{"replay", "--quiet", "--metrics-exporter", "none"}, exp.args...)
				code := app.Main(b.Context(), app.Env{
					Args:   append(args, name),
					Stdout: io.Discard,
					Stderr: io.Discard,
					Getenv: func(string) string { return "" },
				})
				if code != 0 {
					b.Fatalf("replay exited %d", code)
				}
			}
		})
	}
}
