//go:build realstack

package e2e

import (
	"bufio"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpjson"
	"github.com/pi-otel/pi-otel/internal/testutil/otlpwalk"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// TestLogRecordsOfALiveRun runs the real Pi under `pi-otel run --logs-file`
// with its spans going to a real Jaeger: every log record names its run's
// trace and a span Jaeger holds, of the kind its event belongs to, and no
// content reaches the records without --capture-content.
func TestLogRecordsOfALiveRun(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	s := prepare(t, "bash-tool")
	logs := filepath.Join(t.TempDir(), "logs.jsonl")
	since := time.Now().Add(-time.Second)
	r := runPiOtel(t, s.pi, call{
		args: append([]string{"run", "--logs-file", logs, "--"}, s.piArgs()...),
		env:  otlpGRPC(j, "e2e-logs"),
	})
	if r.code != 0 {
		t.Fatalf("pi-otel exited %d\nstderr:\n%s", r.code, r.stderr)
	}
	traces := stored(t, j, "e2e-logs", since, r)
	tr := one(t, traces)
	names := map[string]string{}
	for _, sp := range tr.Spans {
		names[sp.SpanID] = sp.Name
	}

	f, err := os.Open(logs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "echo hello from bash") {
			t.Errorf("the tool's command reached a log record without --capture-content")
		}
		req, err := otlpjson.UnmarshalLogs(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		for lr := range otlpwalk.LogRecords(req) {
			got[lr.EventName]++
			if id := hex.EncodeToString(lr.TraceId); id != tr.ID {
				t.Errorf("%s: trace %s, the run's is %s", lr.EventName, id, tr.ID)
			}
			span := names[hex.EncodeToString(lr.SpanId)]
			want := map[string]string{
				vocab.LogUserPrompt: vocab.SpanTurn, vocab.LogModelCallFinished: "chat fake-model",
				vocab.LogToolResult: "execute_tool bash", vocab.LogRunSettled: vocab.SpanRoot,
			}[lr.EventName]
			if span == "" || span != want {
				t.Errorf("%s tied to span %q in Jaeger, want %q", lr.EventName, span, want)
			}
		}
	}
	want := map[string]int{vocab.LogUserPrompt: 1, vocab.LogModelCallFinished: 2, vocab.LogToolResult: 1, vocab.LogRunSettled: 1}
	if len(got) != len(want) {
		t.Errorf("records %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("records %v, want %v", got, want)
			break
		}
	}
	if !strings.Contains(r.summary.Line, ", 5 log records → file "+logs) {
		t.Errorf("summary %q does not count the records", r.summary.Line)
	}
}
