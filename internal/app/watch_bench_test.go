package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// BenchmarkWatchSinceAll traces the history of 1000 session files (a real
// Pi 1.6.0 session of two runs each, each its own session) the way pi-otel watch --since all
// does, exporter none: the follower, the session tracer, the SDK and the
// span metrics.
func BenchmarkWatchSinceAll(b *testing.B) { benchWatchSinceAll(b, false) }

// BenchmarkWatchSinceAllPropagation is BenchmarkWatchSinceAll with
// --propagation call, watch's default: every line is also read for the
// bash calls whose context to publish, and for whether it ends its file.
func BenchmarkWatchSinceAllPropagation(b *testing.B) { benchWatchSinceAll(b, true) }

func benchWatchSinceAll(b *testing.B, propagate bool) {
	src := repo.Read(b, "testdata/sessions/pi-1.6.0/two-prompts.jsonl")
	dir := b.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	const files = 1000
	for i := range files {
		d := filepath.Join(dir, fmt.Sprintf("--p%d--", i/100))
		_ = os.MkdirAll(d, 0o755)
		p := filepath.Join(d, fmt.Sprintf("s%d.jsonl", i))
		if err := os.WriteFile(p, historytest.WithSessionID(b, src, fmt.Sprintf("s%d", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		_ = os.Chtimes(p, old, old)
	}
	cfg := configtest.Default()
	cfg.Traces.Exporter = telemetry.ExporterNone
	cfg.Quiet = true
	cfg.Propagation = config.PropagateRun
	if propagate {
		cfg.Propagation = config.PropagateCall
		cfg.PropagationDir = filepath.Join(b.TempDir(), "ctx") // 0700, made by toolctx
	}
	state := b.TempDir()
	b.SetBytes(int64(files * len(src))) // about: the headers differ a little
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		env := Env{Stderr: io.Discard, Getenv: func(k string) string {
			if k == "XDG_STATE_HOME" {
				return state
			}
			return ""
		}}
		cc := openWatchContexts(env, cfg, state)
		if propagate && cc == nil {
			b.Fatal("no call contexts")
		}
		sp, err := newSessionPipeline(env, cfg, sessionConfig{Calls: cc})
		if err != nil {
			b.Fatal(err)
		}
		fc := sp.followerConfig()
		fc.Dirs = []string{dir}
		fc.StatePath = filepath.Join(b.TempDir(), "state.json")
		fc.Since = sessionwatch.SinceAll
		f := sessionwatch.New(fc)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		// The first scan commits everything before Run settles into its
		// loop; the state file then lists every file as committed.
		wait.For(b, time.Minute, func() bool { return sp.tel.Stats().Traces >= 2*files },
			func() string { return "the first scan did not trace every file" })
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		_ = sp.flush(context.Background(), true)
		cc.close()
	}
}
