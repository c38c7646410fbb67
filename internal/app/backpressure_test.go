package app_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/app"
)

// Replay has no live Pi to protect: with a queue far smaller than the
// stream, it waits for the exporter and loses no span.
func TestReplayLosesNothingToAFullQueue(t *testing.T) {
	dir := t.TempDir()
	one := readFile(t, captures+"bash-tool.jsonl")
	in := filepath.Join(dir, "fifty.jsonl")
	writeFile(t, in, bytes.Repeat(one, 50))
	out := filepath.Join(dir, "traces.jsonl")
	var stdout, stderr bytes.Buffer
	code := app.Main(app.Env{
		Args:  []string{"replay", "--traces-file", out, "--queue-size", "4", "--max-export-batch-size", "2", in},
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" },
	})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	spans := 0
	for _, tr := range readTraces(t, out) {
		spans += len(tr.spans)
	}
	if spans != 50*7 || strings.Contains(stderr.String(), "dropped") {
		t.Errorf("%d spans in the file, want %d\n%s", spans, 50*7, stderr.String())
	}
}
