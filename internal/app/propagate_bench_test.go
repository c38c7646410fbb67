package app

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/benchutil"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
	"github.com/pi-otel/pi-otel/internal/testutil/streamgen"
)

// BenchmarkRunRecords is what run --mode json does with each of Pi's
// records, exporter none, over the realistic stream: the sink, the
// mapper and the SDK, and with --propagation call (the default) the
// publishing of each bash call's context.
func BenchmarkRunRecords(b *testing.B) {
	data, recs := streamgen.BenchStream()
	for _, mode := range []string{config.PropagateRun, config.PropagateCall} {
		b.Run("propagation="+mode, func(b *testing.B) {
			cfg := configtest.Default()
			cfg.Traces.Exporter = telemetry.ExporterNone
			cfg.Metrics.Exporter = telemetry.ExporterNone
			cfg.Quiet = true
			cfg.Propagation = mode
			cfg.PropagationDir = filepath.Join(b.TempDir(), "ctx") // 0700, made by toolctx
			env := Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}
			cc := openCallContexts(env, cfg)
			if mode == config.PropagateCall && cc == nil {
				b.Fatal("no call contexts")
			}
			p, err := newPipeline(env, cfg, nil, cc)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cc.close() })
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				for _, r := range recs {
					p.sink.Record(r)
				}
			}
			benchutil.ReportPerRecord(b, len(recs))
		})
	}
}
