package agentmap_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// replay maps a stream through a recorder, the way `pi-otel replay` does.
func replay(t *testing.T, stream []byte, end *agentmap.Ending, opts ...agentmap.Option) ([]*spantree.Node, *agentmap.Mapper, ingest.Stats) {
	t.Helper()
	rec := spantree.NewRecorder()
	m := agentmap.New(rec, opts...)
	if end == nil {
		end = &agentmap.Ending{Reason: vocab.EndEOF}
	}
	st := replaytest.Map(m, stream, *end)
	return rec.Forest(t), m, st
}

// ending is how the captured run of name ended, as `pi-otel run` would
// see it: Pi killed by a signal, an older Pi that exited, and otherwise
// the end of the stream, as `pi-otel replay` sees it.
func ending(version, name string) *agentmap.Ending {
	switch {
	case name == "sigterm-mid-tool":
		return &agentmap.Ending{Reason: vocab.EndSignal, ExitCode: 143, Signal: "SIGTERM"}
	case name == "sigint-mid-tool":
		return &agentmap.Ending{Reason: vocab.EndSignal, ExitCode: 130, Signal: "SIGINT"}
	case version != v160:
		return &agentmap.Ending{Reason: vocab.EndExit}
	}
	return nil
}

// TestCaptureTrees replays every captured Pi stream and compares its span
// trees with the golden NAME.tree beside it (-update rewrites them). The
// end-to-end suite holds live runs to the same files.
func TestCaptureTrees(t *testing.T) {
	streams, err := filepath.Glob(repo.Path("testdata/captures/*/*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range streams {
		version, name := filepath.Base(filepath.Dir(path)), strings.TrimSuffix(filepath.Base(path), ".jsonl")
		if strings.HasPrefix(name, "rpc-") {
			continue // RPC sessions: see internal/rpc's transcripts
		}
		n++
		t.Run(version+"/"+name, func(t *testing.T) {
			forest, _, _ := replay(t, replaytest.Capture(t, version, name), ending(version, name))
			spantree.Golden(t, spantree.CaptureTree(version, name), forest)
		})
	}
	if n == 0 {
		t.Fatal("no captures")
	}
}
