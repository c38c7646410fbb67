package app

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlptest"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// watch stopped mid-backfill while nothing answers at the endpoint and
// the follower waits for room in the exporter's queue: the last flush
// spools what is queued, and the run being traced (its spans ended after
// the signal were dropped, and its run recorded as delivered). The next
// start, with the collector back, delivers every span of the history
// once.
func TestWatchStoppedDuringOutageDeliversEachSpanOnce(t *testing.T) {
	h := historytest.Write(t, 60, 8_000_000)
	want := historytest.Replay(t, h.Paths)
	spoolDir := filepath.Join(t.TempDir(), "spool")
	state := filepath.Join(t.TempDir(), "watch.json")
	// An address nothing listens at, then the collector there.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()

	start := func(protocol string, stopAfter func(ended int64) bool) {
		vars := map[string]string{
			"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr,
			"OTEL_METRICS_EXPORTER":       "none",
			"PI_OTEL_SPOOL_DIR":           spoolDir,
			"PI_OTEL_QUIET":               "true",
			"PI_OTEL_FLUSH_TIMEOUT":       "300ms",
		}
		getenv := func(k string) string { return vars[k] }
		cfg, err := config.Load(nil, getenv)
		if err != nil {
			t.Fatal(err)
		}
		env := Env{Stderr: io.Discard, Getenv: getenv}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sp, fc := sinceAll(ctx, t, env, cfg, h.Dir, state)
		go func() {
			wait.Until(20*time.Second, func() bool { return ctx.Err() != nil || stopAfter(sp.tel.Stats().Ended) })
			cancel()
		}()
		if err := sessionwatch.New(fc).Run(ctx); err != nil {
			t.Fatal(err)
		}
		sp.summary(nil)
		t.Logf("stats %+v", sp.tel.Stats())
	}
	// SIGTERM mid-backfill while a span waits for room: gRPC retries a
	// refused connection, and holds one batch (512 spans) and the queue
	// (2048), the defaults.
	start("grpc", func(ended int64) bool { return ended > 512+2048 })

	col := &otlptest.Receiver{}
	lis, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	col.ServeHTTPOn(t, lis, nil)
	delivered := func() bool {
		got := col.SpanIDs()
		for id := range want.Spans {
			if got[id] == 0 {
				return false
			}
		}
		return true
	}
	start("http/protobuf", func(int64) bool { return delivered() })
	got := col.SpanIDs()
	twice := 0
	for id, n := range got {
		if n > 1 {
			twice++
		}
		if _, ok := want.Spans[id]; !ok {
			t.Errorf("span %s is not in replay", id)
		}
	}
	missing := 0
	for id := range want.Spans {
		if got[id] == 0 {
			missing++
		}
	}
	if twice > 0 || missing > 0 {
		t.Errorf("of %d spans, %d delivered twice or more, %d never", len(want.Spans), twice, missing)
	}
}
