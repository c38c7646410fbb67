//go:build realstack

package collector_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/metricstest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// logStore stands in for a gateway's log store: it keeps the trace id of every record it
// receives.
type logStore struct {
	mu     sync.Mutex
	traces map[string]int // trace id → records
}

func (s *logStore) keep(_ string, req *collogpb.ExportLogsServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for lr := range otlpwalk.LogRecords(req) {
		s.traces[hex.EncodeToString(lr.TraceId)]++
	}
}

func (s *logStore) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.traces))
	for k, v := range s.traces {
		out[k] = v
	}
	return out
}

// TestLogsRideTheAgent: log records ride the same agent as the spans, routed by trace id, to
// the gateways, which run gateway.yaml with gateway-logs.yaml merged over it, each writing to a
// log store of its own. Every record arrives once, and a run's records all at one gateway. Not
// necessarily the gateway holding the run's spans: load_balancing v0.161 hashes a log record's
// trace id as hex text and a span's as raw bytes, so the two rings disagree (the test logs how
// often; nothing at the gateway needs them together).
func TestLogsRideTheAgent(t *testing.T) {
	t.Parallel()
	var stores [2]*logStore
	var urls [2]string
	for i := range stores {
		stores[i] = &logStore{traces: map[string]int{}}
		srv := httptest.NewServer(collectortest.LogsEndpoint(stores[i].keep))
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	s := startScaleStack(t, collectortest.StackOptions{
		SamplePercentage: "0", DecisionWait: "2s",
		GatewayOverlays: []string{repo.Path("collector/gateway-logs.yaml")},
		GatewayEnv:      func(i int) map[string]string { return map[string]string{"PI_OTEL_LOGS_ENDPOINT": urls[i]} },
	})

	const runs, recordsPerRun = 40, 2
	ctx := context.Background()
	tp := collectortest.Sender(t, s.AgentOTLP, "pi-otel")
	var roots []trace.SpanContext
	for range runs {
		roots = append(roots, metricstest.Emit(ctx, tp.Tracer("logs-test"), benchRun))
	}
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	sendLogs(t, s.AgentOTLP, roots, recordsPerRun)

	waitForSpans(t, s, runs*benchSpansPerRun, time.Minute)
	var got [2]map[string]int
	collectortest.Eventually(t, time.Minute, func() bool {
		got = [2]map[string]int{stores[0].snapshot(), stores[1].snapshot()}
		n := 0
		for _, m := range got {
			for _, c := range m {
				n += c
			}
		}
		return n >= runs*recordsPerRun
	}, func() string { return fmt.Sprintf("log stores hold %v and %v", got[0], got[1]) })

	// Each trace's records together in one store, each once; and, as a figure, how many sit
	// beside their spans.
	taps := [2]map[string][]*jaegertest.Span{s.tap(t, 0), s.tap(t, 1)}
	own := owners(taps)
	beside := 0
	for _, r := range roots {
		id := r.TraceID().String()
		n0, n1 := got[0][id], got[1][id]
		if n0+n1 != recordsPerRun || (n0 != 0 && n1 != 0) {
			t.Errorf("trace %s: %d records in gateway-1's store, %d in gateway-2's, want all %d in one", id, n0, n1, recordsPerRun)
			continue
		}
		logsAt := 0
		if n1 > 0 {
			logsAt = 1
		}
		if gw := own[id]; len(gw) == 1 && gw[0] == logsAt {
			beside++
		}
	}
	for i, m := range got {
		if len(m) == 0 {
			t.Errorf("gateway-%d's store got no record: nothing was routed to it", i+1)
		}
	}
	t.Logf("%d runs, %d records: each run's records at one gateway (%d and %d runs); at the gateway holding their spans: %d of %d",
		runs, runs*recordsPerRun, len(got[0]), len(got[1]), beside, runs)
}

// sendLogs exports n log records per root span over OTLP/gRPC, each carrying the span's trace
// and span id as pi-otel's records do.
func sendLogs(t *testing.T, endpoint string, roots []trace.SpanContext, n int) {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sl := &logspb.ScopeLogs{Scope: &commonpb.InstrumentationScope{Name: "logs-test"}}
	now := uint64(time.Now().UnixNano())
	for _, r := range roots {
		tid, sid := r.TraceID(), r.SpanID()
		for i := range n {
			sl.LogRecords = append(sl.LogRecords, &logspb.LogRecord{
				TimeUnixNano: now, SeverityNumber: logspb.SeverityNumber_SEVERITY_NUMBER_INFO, SeverityText: "INFO",
				EventName: fmt.Sprintf("logs-test.record.%d", i),
				TraceId:   bytes.Clone(tid[:]), SpanId: bytes.Clone(sid[:]),
			})
		}
	}
	req := &collogpb.ExportLogsServiceRequest{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "pi-otel"}}}}},
		ScopeLogs: []*logspb.ScopeLogs{sl},
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := collogpb.NewLogsServiceClient(conn).Export(ctx, req); err != nil {
		t.Fatalf("exporting logs to the agent: %v", err)
	}
}
