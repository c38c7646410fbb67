package app

import (
	"context"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry/spool"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlptest"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// taken counts the spans the collector took by span id, and apart the
// spooled ones of an earlier process, called "earlier" (they share an id).
func taken(col *otlptest.Receiver) (got map[string]int, earlier int) {
	got = map[string]int{}
	for _, s := range col.Spans() {
		if s.GetName() == "earlier" {
			earlier++
			continue
		}
		got[hex.EncodeToString(s.GetSpanId())]++
	}
	return got, earlier
}

// A full spool under watch: a batch the collector does not take and the
// spool has no room for fails the flush, so the state stays where it was;
// nothing spooled is deleted. Once the collector takes batches again, the
// runs are traced again from the committed place and delivered, and the
// spool is sent.
func TestWatchFullSpoolKeepsTheState(t *testing.T) {
	t.Parallel()
	h := historytest.Write(t, 2, 60_000)
	want := historytest.Replay(t, h.Paths)
	// While failing, the collector answers every export with 500: not
	// retried by the exporter, not a refusal of the data, so the batch
	// goes to the spool.
	var failing atomic.Bool
	failing.Store(true)
	col := &otlptest.Receiver{Answer: func(context.Context, otlptest.Export) error {
		if failing.Load() {
			return status.Error(codes.Internal, "collector failing")
		}
		return nil
	}}
	addr := col.StartHTTP(t, nil)

	// An earlier process left 5 spans of 4 KiB, which fill the spool.
	spoolDir := filepath.Join(t.TempDir(), "spool")
	earlier, err := spool.Open(spool.Config{Dir: spoolDir})
	if err != nil {
		t.Fatal(err)
	}
	ss := &tracepb.ScopeSpans{}
	for range 5 {
		ss.Spans = append(ss.Spans, &tracepb.Span{Name: "earlier", TraceId: make([]byte, 16), SpanId: []byte{1, 2, 3, 4, 5, 6, 7, 8},
			Attributes: []*commonpb.KeyValue{{Key: "pad", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{
				StringValue: strings.Repeat("x", 4<<10)}}}}})
	}
	if err := earlier.Put(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{ss}}}}); err != nil {
		t.Fatal(err)
	}
	spooled := func() int64 {
		ents, _ := os.ReadDir(spoolDir)
		var n int64
		for _, e := range ents {
			if info, err := e.Info(); err == nil {
				n += info.Size()
			}
		}
		return n
	}
	held := spooled()

	vars := map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr,
		"OTEL_METRICS_EXPORTER":       "none",
		"PI_OTEL_SPOOL_DIR":           spoolDir,
		"PI_OTEL_QUIET":               "true",
	}
	getenv := func(k string) string { return vars[k] }
	cfg, err := config.Load(nil, getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Spool.MaxBytes = held + 16 // no room for a batch
	state := filepath.Join(t.TempDir(), "watch.json")
	env := Env{Stderr: io.Discard, Getenv: getenv}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, fc := sinceAll(ctx, t, env, cfg, h.Dir, state)
	// At the first failed flush: what the spool and the state hold, and
	// the collector comes back.
	var failure error
	var heldAtFailure int64
	var committedAtFailure int64
	flush := fc.Flush
	fc.Flush = func(ctx context.Context, final bool) error {
		err := flush(ctx, final)
		if err != nil && !final && failure == nil {
			failure, heldAtFailure = err, spooled()
			if st, first, err := sessionwatch.LoadState(state); err == nil && !first {
				for _, fs := range st.Files {
					committedAtFailure += fs.Committed
				}
			}
			failing.Store(false)
		}
		return err
	}
	f := sessionwatch.New(fc)
	delivered := func() bool { // every span is delivered and the spool is sent
		got, _ := taken(col)
		n := 0
		for id := range want.Spans {
			if got[id] > 0 {
				n++
			}
		}
		return n == len(want.Spans) && spooled() == 0
	}
	go func() {
		wait.Until(time.Minute, func() bool { return ctx.Err() != nil || delivered() })
		cancel()
	}()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if failure == nil || !strings.Contains(failure.Error(), "not exported") {
		t.Fatalf("no flush failed for the full spool: %v; stats %+v", failure, f.Stats())
	}
	if heldAtFailure != held || committedAtFailure != 0 {
		t.Errorf("at the failure the spool held %d bytes (had %d) and the state had committed %d bytes, want both unmoved",
			heldAtFailure, held, committedAtFailure)
	}
	got, late := taken(col)
	missing := 0
	for id := range want.Spans {
		if got[id] == 0 {
			missing++
		}
	}
	if missing > 0 || late != 5 {
		t.Errorf("%d of %d spans never delivered, %d of the 5 spooled ones delivered", missing, len(want.Spans), late)
	}
	if n := spooled(); n != 0 {
		t.Errorf("the spool still holds %d bytes", n)
	}
}
