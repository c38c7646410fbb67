package app

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry/spool"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// troubledCollector is an OTLP/HTTP trace receiver that, while failing,
// answers every export with 500 (not retried by the exporter, not a
// refusal of the data: the batch goes to the spool), and otherwise counts
// each span id it takes, and the spans called "earlier".
type troubledCollector struct {
	failing atomic.Bool
	mu      sync.Mutex
	got     map[string]int
	earlier int
}

func (c *troubledCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if c.failing.Load() {
		http.Error(w, "collector failing", http.StatusInternalServerError)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	req := &coltracepb.ExportTraceServiceRequest{}
	if err == nil {
		err = proto.Unmarshal(raw, req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for s := range otlpwalk.Spans(req) {
		if s.GetName() == "earlier" {
			c.earlier++
			continue
		}
		c.got[hex.EncodeToString(s.GetSpanId())]++
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// A full spool under watch: a batch the collector does not take and the
// spool has no room for fails the flush, so the state stays where it was;
// nothing spooled is deleted. Once the collector takes batches again, the
// runs are traced again from the committed place and delivered, and the
// spool is sent.
func TestWatchFullSpoolKeepsTheState(t *testing.T) {
	h := historytest.Write(t, 2, 60_000)
	want := historytest.Replay(t, h.Paths)
	col := &troubledCollector{got: map[string]int{}}
	col.failing.Store(true)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: col, ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })

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
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + lis.Addr().String(),
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
			col.failing.Store(false)
		}
		return err
	}
	f := sessionwatch.New(fc)
	delivered := func() bool { // every span is delivered and the spool is sent
		col.mu.Lock()
		n := 0
		for id := range want.Spans {
			if col.got[id] > 0 {
				n++
			}
		}
		col.mu.Unlock()
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
	col.mu.Lock()
	defer col.mu.Unlock()
	missing := 0
	for id := range want.Spans {
		if col.got[id] == 0 {
			missing++
		}
	}
	if missing > 0 || col.earlier != 5 {
		t.Errorf("%d of %d spans never delivered, %d of the 5 spooled ones delivered", missing, len(want.Spans), col.earlier)
	}
	if n := spooled(); n != 0 {
		t.Errorf("the spool still holds %d bytes", n)
	}
}
