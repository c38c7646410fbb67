//go:build realstack

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
	"github.com/pi-otel/pi-otel/internal/testutil/otlptest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
)

// refusingCollector refuses every other trace export as invalid (gRPC
// InvalidArgument, HTTP 400) and takes the others; it counts how often it
// saw each span id, refused or taken.
type refusingCollector struct {
	mu              sync.Mutex
	n               int
	seen            map[string]int
	taken, refusedN int
}

// answer counts an export's spans, and refuses every other one.
func (c *refusingCollector) answer(_ context.Context, e otlptest.Export) error {
	req, ok := e.Request.(*coltracepb.ExportTraceServiceRequest)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	refuse := c.n%2 == 1
	for s := range otlpwalk.Spans(req) {
		c.seen[fmt.Sprintf("%x", s.GetSpanId())]++
		if refuse {
			c.refusedN++
		} else {
			c.taken++
		}
	}
	if refuse {
		return status.Error(codes.InvalidArgument, "span refused by the test")
	}
	return nil
}

// TestWatchRefusedBatchesMoveOn: a collector that refuses batches as
// invalid (a permanent error) gets each span once: the refused spans are
// not spooled, the state moves past them and nothing is traced again; the
// summary and the pi_otel.spans.dropped metric (error.type=refused) count
// exactly the spans the collector refused.
func TestWatchRefusedBatchesMoveOn(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(protocol, func(t *testing.T) {
			c := &refusingCollector{seen: map[string]int{}}
			r := &otlptest.Receiver{CountOnly: true, Answer: c.answer}
			var addr string
			if protocol == "grpc" {
				addr = r.StartGRPC(t)
			} else {
				addr = r.StartHTTP(t, nil)
			}

			h := historytest.Write(t, 8, 400_000)
			out := t.TempDir()
			spool := filepath.Join(out, "spool")
			state := filepath.Join(out, "watch.json")
			metricsFile := filepath.Join(out, "metrics.jsonl")
			env := []string{
				"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr, "OTEL_EXPORTER_OTLP_PROTOCOL=" + protocol,
				"OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=e2e-watch-refused", "PI_OTEL_SPOOL_DIR=" + spool,
				"OTEL_LOGS_EXPORTER=none",
			}
			w := startHistWatch(t, env, "--since", "all", "--settle", "500ms", "--state", state,
				"--metrics-exporter", "file", "--metrics-file", metricsFile, h.Dir)
			waitState(t, w, state, scanned)
			// Past the follower's first retry (5s after a failed commit):
			// runs traced again would reach the collector a second time.
			// Real time is the point: the retry timer runs in the watch
			// process, and nothing outside it says it has fired.
			time.Sleep(7 * time.Second)
			w.stop(t)

			want := historytest.Replay(t, h.Paths)
			c.mu.Lock()
			defer c.mu.Unlock()
			var twice, missing int
			for id := range want.Spans {
				switch n := c.seen[id]; {
				case n == 0:
					missing++
				case n > 1:
					twice += n - 1
				}
			}
			t.Logf("%d spans: %d taken, %d refused, %d seen twice", len(want.Spans), c.taken, c.refusedN, twice)
			if c.refusedN == 0 || c.taken == 0 {
				t.Fatalf("the collector took %d and refused %d: the test refuses nothing", c.taken, c.refusedN)
			}
			if missing+twice > 0 || len(c.seen) != len(want.Spans) {
				t.Errorf("the collector saw %d spans of %d: %d missing, %d twice", len(c.seen), len(want.Spans), missing, twice)
			}
			m := regexp.MustCompile(`(\d+) spans dropped \(refused by the collector`).FindStringSubmatch(w.stderr.String())
			if m == nil || m[1] != strconv.Itoa(c.refusedN) {
				t.Errorf("the summary does not count %d refused spans:\n%s", c.refusedN, w.stderr)
			}
			if got := refusedMetric(t, metricsFile); got != int64(c.refusedN) {
				t.Errorf("pi_otel.spans.dropped{error.type=refused} = %d, want %d", got, c.refusedN)
			}
			if left, _ := filepath.Glob(filepath.Join(spool, "*.otlp")); len(left) != 0 {
				t.Errorf("%d refused batches spooled", len(left))
			}
			if bytes.Contains(w.stderr.Bytes(), []byte("the runs are traced again")) {
				t.Errorf("runs were traced again:\n%s", w.stderr)
			}
		})
	}
}

// refusedMetric is the last value of pi_otel.spans.dropped with
// error.type=refused in a file of OTLP/JSON metric lines.
func refusedMetric(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v int64 = -1
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		req, err := otlpjson.UnmarshalMetrics(line)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for m := range otlpwalk.Metrics(req) {
			if m.Name != "pi_otel.spans.dropped" {
				continue
			}
			for _, dp := range m.GetSum().GetDataPoints() {
				for _, kv := range dp.GetAttributes() {
					if kv.GetKey() == "error.type" && kv.GetValue().GetStringValue() == "refused" {
						v = dp.GetAsInt()
					}
				}
			}
		}
	}
	return v
}

// TestWatchLogsDownSpansOnce: the logs endpoint is down while traces go
// through. The records are counted lost (the summary), the state moves
// on, and no run is traced again for them: the collector gets every span
// of the history once.
func TestWatchLogsDownSpansOnce(t *testing.T) {
	t.Parallel()
	c := &otlptest.Receiver{}
	addr := c.StartGRPC(t)
	down := freeport.Addr(t) // nothing listens there

	h := historytest.Write(t, 8, 400_000)
	state := filepath.Join(t.TempDir(), "watch.json")
	env := []string{
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://" + addr,
		"OTEL_LOGS_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=http://" + down, "OTEL_EXPORTER_OTLP_TIMEOUT=1000",
		"OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=e2e-watch-logs-down", "OTEL_METRICS_EXPORTER=none",
	}
	w := startHistWatch(t, env, "--since", "all", "--settle", "500ms", "--state", state, h.Dir)
	st := waitState(t, w, state, scanned)
	// Past the follower's first retry (5s after a failed commit). Real
	// time is the point: the retry timer runs in the watch process.
	time.Sleep(7 * time.Second)
	w.stop(t)

	want := historytest.Replay(t, h.Paths)
	got := c.SpanIDs()
	var twice, missing int
	for id := range want.Spans {
		switch n := got[id]; {
		case n == 0:
			missing++
		case n > 1:
			twice += n - 1
		}
	}
	m := regexp.MustCompile(`(\d+) log records? failed to export`).FindStringSubmatch(w.stderr.String())
	t.Logf("%d spans, %d twice, %d missing; committed %d bytes; %v", len(want.Spans), twice, missing, committed(st), m)
	if missing+twice > 0 {
		t.Errorf("the collector got %d spans of %d: %d missing, %d twice", len(got), len(want.Spans), missing, twice)
	}
	if m == nil {
		t.Errorf("the summary does not count the lost log records:\n%s", w.stderr)
	}
	if committed(st) == 0 {
		t.Errorf("the state did not move")
	}
	if bytes.Contains(w.stderr.Bytes(), []byte("the runs are traced again")) {
		t.Errorf("runs were traced again for their log records:\n%s", w.stderr)
	}
}
