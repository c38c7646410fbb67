package rpc_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// -update (spantree's) rewrites the golden trees; re-recording needs the
// real Pi, so it has a flag of its own.
var record = flag.Bool("record", false, "run the real Pi through every rpctest scenario and rewrite testdata/transcripts")

const transcriptDir = "testdata/transcripts"

// transcript loads the recorded session of scenario name, recording it
// first with -record.
func transcript(t *testing.T, name string) []rpctest.Line {
	t.Helper()
	path := filepath.Join(transcriptDir, name+".jsonl")
	if *record {
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
		t.Fatalf("%v (record with `go test ./internal/rpc -run TestTranscript -args -record`)", err)
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

// TestTranscriptsRecorded makes sure every scenario has a transcript, and
// compares the traces of each with the golden NAME.tree beside it (-update
// rewrites them). The end-to-end RPC suite holds live sessions to the same
// files.
func TestTranscriptsRecorded(t *testing.T) {
	for _, s := range rpctest.Scenarios() {
		t.Run(s.Name, func(t *testing.T) {
			if lines := transcript(t, s.Name); len(lines) == 0 {
				t.Fatal("empty transcript")
			}
			f, _ := play(t, s.Name, transcriptEnding(s.Name))
			spantree.Golden(t, spantree.TranscriptTree(s.Name), f)
		})
	}
}

// transcriptEnding is how the recorded session of name ended.
func transcriptEnding(name string) agentmap.Ending {
	if name == "sigterm-mid-tool" {
		return agentmap.Ending{Reason: vocab.EndSignal, ExitCode: 143, Signal: "SIGTERM"}
	}
	return exit0
}
