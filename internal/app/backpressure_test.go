package app_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/app"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
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
	code := app.Main(t.Context(), app.Env{
		Args:  []string{"replay", "--traces-file", out, "--queue-size", "4", "--max-export-batch-size", "2", in},
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" },
	})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	spans := 0
	for _, tr := range readTraces(t, out) {
		tr.Walk(func(*spantree.Node) { spans++ })
	}
	if spans != 50*7 || strings.Contains(stderr.String(), "dropped") {
		t.Errorf("%d spans in the file, want %d\n%s", spans, 50*7, stderr.String())
	}
}

// The summary line says what of the input was not traced as it should be.
func TestSummaryCountsBadInput(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.jsonl")
	stream := append(readFile(t, captures+"text.jsonl"),
		"not json\n{\"no\":\"type\"}\n{\"type\":\"from_the_future\"}\n{\"type\":\"turn_end\"}\n"...)
	writeFile(t, in, stream)
	var stdout, stderr bytes.Buffer
	app.Main(t.Context(), app.Env{
		Args:  []string{"replay", "--traces-exporter", "none", in},
		Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
		Getenv: func(string) string { return "" },
	})
	if !strings.Contains(stderr.String(), "; 2 malformed records, 1 event of an unknown type, 2 events out of order") {
		t.Errorf("summary:\n%s", stderr.String())
	}
}
