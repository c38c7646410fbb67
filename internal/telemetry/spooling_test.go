package telemetry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/telemetry/spool"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/otlptest"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// spoolHolds lists the spool's files by their names as spooled, claimed
// by a sender or not.
func spoolHolds(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	claim := regexp.MustCompile(`^\.sending-\d+-`)
	var out []string
	for _, e := range ents {
		out = append(out, claim.ReplaceAllString(e.Name(), ""))
	}
	return out
}

// spansNamed counts the spans called name the receiver got.
func spansNamed(name string, n int) func(r *otlptest.Receiver) bool {
	return func(r *otlptest.Receiver) bool {
		c := 0
		for _, s := range r.Spans() {
			if s.Name == name {
				c++
			}
		}
		return c >= n
	}
}

// spoolEarlier spools n spans called "earlier", of 4 KiB each, as an
// earlier process would have.
func spoolEarlier(t *testing.T, dir string, n int) {
	t.Helper()
	earlier, err := spool.Open(spool.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ss := &tracepb.ScopeSpans{}
	for range n {
		ss.Spans = append(ss.Spans, &tracepb.Span{Name: "earlier", TraceId: make([]byte, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8},
			Attributes: []*commonpb.KeyValue{{Key: "pad", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{
				StringValue: strings.Repeat("x", 4<<10)}}}}})
	}
	if err := earlier.Put(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{ss}}}}); err != nil {
		t.Fatal(err)
	}
}

// A spool at its bound refuses the next batch, which counts as failed
// (what tells watch to trace its runs again) and is said, once; nothing
// spooled is deleted for it. Once the collector takes batches again, the
// spool is sent, and takes new batches again.
func TestFullSpoolRefusesThenDrains(t *testing.T) {
	eachProtocol(t, func(t *testing.T, ctx context.Context, protocol string) {
		lis := listen(t)
		rcv := newReceiver()
		var failing atomic.Bool
		failing.Store(true)
		rcv.Answer = failingWhile(&failing)
		if protocol == "grpc" {
			serveGRPC(t, rcv, lis, nil)
		} else {
			serveHTTP(t, rcv, lis, nil)
		}
		// An earlier process left 5 spans, which fill the spool; they are
		// large, so that once they are sent a batch fits.
		dir := filepath.Join(t.TempDir(), "spool")
		spoolEarlier(t, dir, 5)
		held := spoolHolds(t, dir)
		info, err := os.Stat(filepath.Join(dir, held[0]))
		if err != nil {
			t.Fatal(err)
		}
		cfg := loadConfig(t, map[string]string{
			"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
			"OTEL_METRICS_EXPORTER":       "none",
		})
		cfg.Spool = telemetry.Spool{Dir: dir, MaxBytes: info.Size() + 16, MaxAge: time.Hour}
		tel, stderr := setup(t, cfg)

		for round := 1; round <= 2; round++ {
			makeTrace(tel.TracerProvider())
			if err := tel.FlushSpans(ctx); err != nil {
				t.Fatal(err)
			}
			if s, sp := tel.Stats(), tel.SpoolStats(); s.Failed != int64(3*round) || s.Spooled != 0 || sp.Full != int64(3*round) {
				t.Fatalf("round %d: stats %+v, spool %+v; want every span failed, none spooled", round, s, sp)
			}
			if got := spoolHolds(t, dir); len(got) != 1 || got[0] != held[0] {
				t.Fatalf("round %d: spool holds %v, want what it held: %v", round, got, held)
			}
		}
		full := "pi-otel: spool full: " + dir + " holds "
		if out := stderr.String(); strings.Count(out, full) != 1 || !strings.Contains(out, "nothing spooled is deleted") {
			t.Errorf("stderr = %q, want once %q", out, full)
		}
		if sum := tel.Summary(); !strings.Contains(sum, fmt.Sprintf("6 failed to export, 6 not kept (the spool %s is full)", dir)) {
			t.Errorf("summary = %q", sum)
		}

		// The collector takes batches again: the new one, then the spool.
		failing.Store(false)
		makeTrace(tel.TracerProvider())
		if err := tel.FlushSpans(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, rcv, "the spooled spans", spansNamed("earlier", 5))
		wait.For(t, time.Minute, func() bool { return ctx.Err() != nil || len(spoolHolds(t, dir)) == 0 }, func() string { return "" })
		if held := spoolHolds(t, dir); len(held) > 0 {
			t.Fatalf("spool not empty: %v", held)
		}
		// And it has room again for a batch the collector does not take.
		failing.Store(true)
		makeTrace(tel.TracerProvider())
		if err := tel.FlushSpans(ctx); err != nil {
			t.Fatal(err)
		}
		if s := tel.Stats(); s.Exported != 3 || s.Spooled != 3 || s.Failed != 6 {
			t.Errorf("stats %+v, want 3 exported, 3 spooled, still 6 failed", s)
		}
		if got := spoolHolds(t, dir); len(got) != 1 || got[0] == held[0] {
			t.Errorf("spool holds %v, want the new batch", got)
		}
		if sp := tel.SpoolStats(); sp.Late != 5 || sp.Expired != 0 {
			t.Errorf("spool stats %+v, want 5 late, none expired", sp)
		}
	})
}

// A batch the collector takes while the spool's send is under way, and
// then fails (it began while the collector was away), has the spool sent
// again at once, not at the next retry: the collector is back.
func TestSpoolSentAgainWhenABatchGoesThroughDuringItsSend(t *testing.T) {
	ctx := testCtx(t)
	lis := listen(t)
	rcv := newReceiver()
	sending, release := make(chan struct{}), make(chan struct{})
	var held sync.Once
	rcv.Answer = func(_ context.Context, e otlptest.Export) error {
		req, ok := e.Request.(*coltracepb.ExportTraceServiceRequest)
		if !ok || req.GetResourceSpans()[0].GetScopeSpans()[0].GetSpans()[0].GetName() != "earlier" {
			return nil
		}
		failed := false
		held.Do(func() {
			close(sending)
			<-release
			failed = true
		})
		if failed {
			return status.Error(codes.Internal, "collector failing") // not retried by the exporter
		}
		return nil
	}
	serveGRPC(t, rcv, lis, nil)
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	dir := filepath.Join(t.TempDir(), "spool")
	spoolEarlier(t, dir, 1)
	cfg := loadConfig(t, map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
		"OTEL_METRICS_EXPORTER":       "none",
	})
	cfg.Spool = telemetry.Spool{Dir: dir, MaxBytes: 1 << 20, MaxAge: time.Hour}
	// No retry within the test's time: only the delivered batch can have
	// the spool sent again.
	tel, _ := setup(t, cfg, telemetry.WithSpoolRetry(time.Hour))
	select {
	case <-sending:
	case <-ctx.Done():
		t.Fatal("the spool was not sent at start")
	}
	makeTrace(tel.TracerProvider())
	if err := tel.FlushSpans(ctx); err != nil {
		t.Fatal(err)
	}
	if s := tel.Stats(); s.Exported != 3 {
		t.Fatalf("stats %+v, want the batch exported", s)
	}
	releaseOnce.Do(func() { close(release) }) // the spool's send fails now
	waitFor(t, ctx, rcv, "the spooled spans", spansNamed("earlier", 1))
}

// Spans spooled longer ago than --spool-max-age are not sent once the
// collector is back: they are dropped, said once, counted in the summary.
func TestExpiredSpoolIsSaidAndCounted(t *testing.T) {
	ctx := testCtx(t)
	lis := listen(t)
	rcv := newReceiver()
	serveHTTP(t, rcv, lis, nil)
	dir := filepath.Join(t.TempDir(), "spool")
	spoolEarlier(t, dir, 5)
	long := time.Now().Add(-3 * time.Hour)
	for _, name := range spoolHolds(t, dir) {
		os.Chtimes(filepath.Join(dir, name), long, long)
	}
	cfg := loadConfig(t, map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
		"OTEL_METRICS_EXPORTER":       "none",
	})
	cfg.Spool = telemetry.Spool{Dir: dir, MaxBytes: 1 << 20, MaxAge: time.Hour}
	tel, stderr := setup(t, cfg)
	makeTrace(tel.TracerProvider())
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if sp := tel.SpoolStats(); sp.Expired != 5 || sp.Late != 0 {
		t.Errorf("spool stats %+v, want 5 expired, none delivered", sp)
	}
	sent := spansNamed("earlier", 1)(rcv)
	if sent {
		t.Error("expired spans were sent")
	}
	want := "pi-otel: 5 spans spooled 3h0m0s ago, past --spool-max-age 1h0m0s, dropped from " + dir + " unsent"
	if out := stderr.String(); strings.Count(out, want) != 1 {
		t.Errorf("stderr = %q, want once %q", out, want)
	}
	if sum := tel.Summary(); !strings.Contains(sum, "5 spooled spans dropped (older than --spool-max-age; not sent)") {
		t.Errorf("summary = %q", sum)
	}
}

// A collector known to be down at exit does not hold the exit for the
// spool's send: a send of earlier processes' spans, asleep in the
// exporter's backoff, used to keep the exporter from shutting down for
// the whole flush timeout (10 s here), where an empty spool let it go at
// once. The spool keeps what it held, and the exit's batch, for the next
// process. "Within a second" is the rule for a signal; 3 s leaves room
// for a loaded machine, far from the 10 s the fault costs.
func TestSpoolSendDoesNotHoldExitWhenCollectorIsDown(t *testing.T) {
	eachProtocol(t, func(t *testing.T, ctx context.Context, protocol string) {
		dir := filepath.Join(t.TempDir(), "spool")
		spoolEarlier(t, dir, 1)
		earlier := spoolHolds(t, dir)
		cfg := loadConfig(t, map[string]string{
			"OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + freeport.Addr(t),
			"OTEL_METRICS_EXPORTER":       "none",
		})
		cfg.Spool = telemetry.Spool{Dir: dir, MaxBytes: 1 << 20, MaxAge: time.Hour}
		cfg.FlushTimeout = 10 * time.Second
		tel, stderr := setup(t, cfg, telemetry.WithSpoolRetry(time.Hour))
		// The spool's send found no collector, and waits to try again.
		wait.For(t, time.Minute, func() bool { return ctx.Err() != nil || strings.Contains(stderr.String(), "no collector at") },
			func() string { return "no failure reported: " + stderr.String() })
		makeTrace(tel.TracerProvider())
		start := time.Now()
		_ = tel.Shutdown(ctx)
		took := time.Since(start)
		t.Logf("shutdown took %v with the flush timeout at 10s", took.Round(time.Millisecond))
		if took > 3*time.Second {
			t.Errorf("shutdown took %v with the collector down: it waited for the spool's send", took)
		}
		held := spoolHolds(t, dir)
		if len(held) != 2 || !slices.Contains(held, earlier[0]) {
			t.Errorf("spool holds %v, want %v and the exit's batch", held, earlier)
		}
		if s, sp := tel.Stats(), tel.SpoolStats(); s.Spooled != 3 || s.Failed != 0 || sp.Late != 0 || sp.Resent != 0 {
			t.Errorf("stats %+v, spool %+v; want the exit's 3 spans spooled, nothing sent", s, sp)
		}
	})
}
