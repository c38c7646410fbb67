package rpc_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/rpc/rpctest"
)

var update = flag.Bool("update", false, "run the real Pi through every rpctest scenario and rewrite testdata/transcripts")

const transcriptDir = "testdata/transcripts"

// transcript loads the recorded session of scenario name, recording it
// first with -update.
func transcript(t *testing.T, name string) []rpctest.Line {
	t.Helper()
	path := filepath.Join(transcriptDir, name+".jsonl")
	if *update {
		s, ok := rpctest.ByName(name)
		if !ok {
			t.Fatalf("no scenario %q", name)
		}
		res, err := s.Run(t.TempDir(), rpctest.Direct)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := rpctest.WriteTranscript(&buf, res.Lines); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lines, err := loadTranscript(name)
	if err != nil {
		t.Fatalf("%v (record with `go test ./rpc -run TestTranscript -args -update`)", err)
	}
	return lines
}

func loadTranscript(name string) ([]rpctest.Line, error) {
	f, err := os.Open(filepath.Join(transcriptDir, name+".jsonl"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return rpctest.ReadTranscript(f, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
}

// TestTranscriptsRecorded makes sure every scenario has a transcript.
func TestTranscriptsRecorded(t *testing.T) {
	for _, s := range rpctest.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			if lines := transcript(t, s.Name); len(lines) == 0 {
				t.Fatal("empty transcript")
			}
		})
	}
}
