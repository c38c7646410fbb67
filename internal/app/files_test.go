package app

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	collogpb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
)

// What the tests that replay into the --*-file exporters share.

// replayOK runs `pi-otel replay args...` with no settings from the
// environment, fails t unless it exits 0, and returns its stderr.
func replayOK(t *testing.T, args ...string) string {
	t.Helper()
	code, _, stderr := mainWith(nil, append([]string{"replay"}, args...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	return stderr
}

// streamFile writes stream to a file of its own for replay.
func streamFile(t *testing.T, stream []byte) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, stream, 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// readOTLP reads an OTLP/JSON lines file, as the file exporters write
// it, and returns every item of every request: OTLP nests each signal's
// items the same way, in scopes within resources.
func readOTLP[R, Res, Scope, T any](t *testing.T, path string, unmarshal func([]byte) (R, error),
	resources func(R) []Res, scopes func(Res) []Scope, items func(Scope) []T) []T {
	t.Helper()
	var out []T
	for _, line := range lines(t, path) {
		req, err := unmarshal(line)
		if err != nil {
			t.Fatalf("%s: %v: %s", path, err, line)
		}
		for _, r := range resources(req) {
			for _, s := range scopes(r) {
				out = append(out, items(s)...)
			}
		}
	}
	return out
}

// fileMetrics is every metric of a --metrics-file.
func fileMetrics(t *testing.T, path string) []*metricpb.Metric {
	t.Helper()
	return readOTLP(t, path, otlpjson.UnmarshalMetrics, (*colmetricpb.ExportMetricsServiceRequest).GetResourceMetrics,
		(*metricpb.ResourceMetrics).GetScopeMetrics, (*metricpb.ScopeMetrics).GetMetrics)
}

// fileLogs is every log record of a --logs-file.
func fileLogs(t *testing.T, path string) []*logspb.LogRecord {
	t.Helper()
	return readOTLP(t, path, otlpjson.UnmarshalLogs, (*collogpb.ExportLogsServiceRequest).GetResourceLogs,
		(*logspb.ResourceLogs).GetScopeLogs, (*logspb.ScopeLogs).GetLogRecords)
}

func lines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	s := bufio.NewScanner(f)
	s.Buffer(nil, 64<<20)
	for s.Scan() {
		out = append(out, append([]byte(nil), s.Bytes()...))
	}
	return out
}
