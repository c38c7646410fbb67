package app

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

type fileRecord struct {
	event, severity, traceID, spanID string
	attrs                            map[string]string
}

// replayWithLogs replays a stream with spans and log records each to a
// file, and returns the raw log file, its records and the span names by
// "traceid/spanid".
func replayWithLogs(t *testing.T, stream []byte, flags ...string) (string, []fileRecord, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	spans, logs := filepath.Join(dir, "spans.jsonl"), filepath.Join(dir, "logs.jsonl")
	stderr := replayOK(t, append(append([]string{"--traces-file", spans, "--logs-file", logs}, flags...), streamFile(t, stream))...)
	names := map[string]string{}
	for _, s := range spantree.All(spantree.ReadOTLPFile(t, spans)) {
		names[s.TraceID+"/"+s.SpanID] = s.Name
	}
	var records []fileRecord
	for _, r := range fileLogs(t, logs) {
		fr := fileRecord{event: r.EventName, severity: r.SeverityText,
			traceID: hex.EncodeToString(r.TraceId), spanID: hex.EncodeToString(r.SpanId), attrs: map[string]string{}}
		for _, kv := range r.Attributes {
			fr.attrs[kv.Key] = kv.Value.String()
		}
		records = append(records, fr)
	}
	raw, err := os.ReadFile(logs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "log records → file "+logs) {
		t.Errorf("summary does not count the records: %s", stderr)
	}
	return string(raw), records, names
}

// TestLogFileTiesRecordsToSpans: `pi-otel replay --logs-file` of a real
// capture writes OTLP/JSON lines whose records name spans of the traces
// file written beside them.
func TestLogFileTiesRecordsToSpans(t *testing.T) {
	stream := repo.Read(t, "testdata/captures/pi-1.6.0/retry-529.jsonl")
	_, records, names := replayWithLogs(t, stream)
	want := map[string]string{ // event → span name
		vocab.LogUserPrompt: vocab.SpanTurn, vocab.LogModelCallFailed: "chat fake-model",
		vocab.LogModelCallFinished: "chat fake-model", vocab.LogRetry: vocab.SpanRetry, vocab.LogRunSettled: vocab.SpanRoot,
	}
	seen := map[string]bool{}
	for _, r := range records {
		seen[r.event] = true
		if got := names[r.traceID+"/"+r.spanID]; got != want[r.event] {
			t.Errorf("%s (%s) tied to span %q, want %q", r.event, r.severity, got, want[r.event])
		}
	}
	if len(seen) != len(want) || len(records) != 5 {
		t.Errorf("records %v", records)
	}
}

// TestLogRecordsKeepThePrivacyRules: the records carry content only with
// --capture-content, redacted as on the spans.
func TestLogRecordsKeepThePrivacyRules(t *testing.T) {
	corpus := secretCorpus(t)
	stream := secretStream(t, corpus)
	raw, records, _ := replayWithLogs(t, stream)
	if len(records) < 4 {
		t.Fatalf("only %d records: the test would prove nothing", len(records))
	}
	if strings.Contains(raw, "VISIBLE-MARKER") {
		t.Fatal("content reached the log records without --capture-content")
	}
	raw, records, _ = replayWithLogs(t, stream, "--capture-content", "--max-content-length", "1000000")
	captured := false
	for _, r := range records {
		if r.event == vocab.LogUserPrompt {
			captured = strings.Contains(r.attrs["gen_ai.input.messages"], "VISIBLE-MARKER")
		}
	}
	if !captured {
		t.Error("--capture-content: the prompt record has no input message")
	}
	for _, s := range corpus {
		if strings.Contains(raw, s.value) {
			t.Errorf("secret survived in a log record: %q (from %q)", s.value, s.context)
		}
	}
}
