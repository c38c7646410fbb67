package app_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A traces file that stops growing mid-line (here a file size limit,
// which the kernel enforces as a full disk, with a short write) keeps
// whole lines only; the summary says what did not fit.
func TestTracesFileFullKeepsWholeLines(t *testing.T) {
	t.Parallel()
	bin := piOtel(t)
	out := filepath.Join(t.TempDir(), "traces.jsonl")
	// bash's ulimit -f counts KiB; small batches make several lines.
	r := runBin(t, "bash", binRun{
		args: []string{"-c", `ulimit -f 8 && exec "$0" replay --traces-file "$1" "$2"`, bin, out, captures + "bash-tool.jsonl"},
		env:  []string{"PI_OTEL_SPOOL_DIR=none", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=2"},
	})
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes kept under an 8 KiB limit; stderr:\n%s", len(data), r.stderr)
	if !strings.Contains(string(r.stderr), "failed to export") {
		t.Fatalf("the summary does not say spans were lost (did the limit bite?):\n%s", r.stderr)
	}
	if len(data) == 0 || data[len(data)-1] != '\n' {
		t.Fatalf("the file ends mid-line: ...%q", data[max(0, len(data)-40):])
	}
	for i, line := range bytes.Split(data[:len(data)-1], []byte("\n")) {
		if !json.Valid(line) {
			t.Errorf("line %d is not whole JSON: %.80q", i+1, line)
		}
	}
}
