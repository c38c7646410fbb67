//go:build realstack

package operator_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"

	"github.com/pi-otel/pi-otel/internal/testutil/collectortest"
	"github.com/pi-otel/pi-otel/internal/testutil/freeport"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
	"github.com/pi-otel/pi-otel/internal/testutil/piotel"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// logStore stands in for the log store behind the gateway.
type logStore struct {
	mu      sync.Mutex
	records map[string]string // "traceid/spanid/event" → severity
	paths   []string
}

func (s *logStore) keep(path string, req *collogpb.ExportLogsServiceRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, path)
	for lr := range otlpwalk.LogRecords(req) {
		s.records[hex.EncodeToString(lr.TraceId)+"/"+hex.EncodeToString(lr.SpanId)+"/"+lr.EventName] = lr.SeverityText
	}
}

// TestLogsThroughTheCollectors: `pi-otel replay` of real captures with OTEL_LOGS_EXPORTER=otlp,
// through the shipped agent and a gateway started with collector/gateway-logs.yaml, reaches an
// OTLP log store with every record, each carrying its run's trace id.
func TestLogsThroughTheCollectors(t *testing.T) {
	t.Parallel()
	bin := piotel.Binary(t)

	store := &logStore{records: map[string]string{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: collectortest.LogsEndpoint(store.keep), ReadHeaderTimeout: time.Minute}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })

	stack := collectortest.StartStack(t, collectortest.StackOptions{
		GatewayOverlays: []string{repo.Path("collector/gateway-logs.yaml")},
		GatewayEnv: func(int) map[string]string {
			return map[string]string{"PI_OTEL_LOGS_ENDPOINT": "http://" + lis.Addr().String() + "/otlp"}
		},
	})
	agentOTLP, nowhere := stack.AgentOTLP, freeport.Addr(t)

	// Each replay writes its records to a file too: the file is what the store must end up with.
	want := map[string]int{} // "traceid/event" → records
	for _, name := range []string{"retry-529", "bash-tool", "sigint-mid-tool"} {
		file := filepath.Join(t.TempDir(), "logs.jsonl")
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		// The generic endpoint and OTEL_LOGS_EXPORTER=otlp, as operators set them.
		cmd := exec.CommandContext(ctx, bin, "replay", "--traces-exporter", "none",
			repo.Path("testdata/captures/pi-1.6.0/"+name+".jsonl"))
		cmd.Env = append(piotel.ExportEnv(os.Environ(), "http://"+agentOTLP, "grpc"), "OTEL_LOGS_EXPORTER=otlp")
		cmd.SysProcAttr = proc.Group()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("replay %s: %v\n%s", name, err, stderr.Bytes())
		}
		m := regexp.MustCompile(`1 trace \(([0-9a-f]{32})\).*, (\d+) log records → otlp grpc`).FindSubmatch(stderr.Bytes())
		if m == nil {
			t.Fatalf("replay %s: no summary with log records:\n%s", name, stderr.Bytes())
		}
		if strings.Contains(stderr.String(), "failed") {
			t.Errorf("replay %s: %s", name, stderr.Bytes())
		}
		// The same replay to a file gives the records to expect.
		cmd = exec.Command(bin, "replay", "--quiet", "--traces-exporter", "none", "--metrics-exporter", "none", "--logs-file", file,
			repo.Path("testdata/captures/pi-1.6.0/"+name+".jsonl"))
		cmd.Env = piotel.ExportEnv(os.Environ(), "http://"+nowhere, "grpc")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("replay %s to a file: %v\n%s", name, err, out)
		}
		raw, _ := os.ReadFile(file)
		events := regexp.MustCompile(`"eventName":"([a-z._]+)"`).FindAllSubmatch(raw, -1)
		if len(events) == 0 || string(m[2]) != strconv.Itoa(len(events)) {
			t.Fatalf("replay %s: %s records over OTLP, %d in the file", name, m[2], len(events))
		}
		for _, e := range events {
			want[string(m[1])+"/"+string(e[1])]++
		}
	}

	collectortest.Eventually(t, 60*time.Second, func() bool {
		store.mu.Lock()
		defer store.mu.Unlock()
		got := map[string]int{}
		for k := range store.records {
			parts := strings.SplitN(k, "/", 3)
			got[parts[0]+"/"+parts[2]]++
		}
		return maps.Equal(got, want)
	}, func() string {
		store.mu.Lock()
		defer store.mu.Unlock()
		return fmt.Sprintf("the log store has %d records, want by trace/event %v", len(store.records), want) + "\nagent:\n" + stack.Agent.Logs() + "\ngateway:\n" + stack.Gateway.Logs()
	})
	store.mu.Lock()
	defer store.mu.Unlock()
	for k := range store.records {
		parts := strings.SplitN(k, "/", 3)
		if len(parts[1]) != 16 || parts[1] == "0000000000000000" {
			t.Errorf("record %s has no span id", k)
		}
		if !slices.Contains(vocab.LogEvents(), parts[2]) {
			t.Errorf("record %s: unknown event name", k)
		}
	}
	for _, p := range store.paths {
		if p != "/otlp/v1/logs" {
			t.Errorf("the gateway posted to %s, want /otlp/v1/logs", p)
		}
	}
}
