package session

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// The corpus in testdata/corpus: session files the real Pi wrote with an
// extension that injects messages around each prompt (inject.ts), and files
// derived from them as real files in the field are: re-saved or cloned with
// a later header, with entries written twice, with fields of unexpected
// types. TestRecordInjectCorpus (-tags realstack) records them.

// injectPrompts are the prompts of the inject captures: four runs, the
// first with a tool call.
var injectPrompts = []string{"Run echo", "Second", "Third", "Fourth"}

func corpusDir() string { return repo.Path(filepath.Join("internal", "session", "testdata", "corpus")) }

func lines(b []byte) [][]byte { return bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) }

// obj decodes a line into a map, keeping numbers as written.
func obj(t *testing.T, l []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(l))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%v: %s", err, l)
	}
	return m
}

// checkInject checks a session file of inject.ts: every prompt its own
// settled run, and the pattern present (an extension entry written
// between a prompt's creation and its persistence), so that the check
// is not met by a file without it.
func checkInject(t *testing.T, b []byte) {
	t.Helper()
	between := 0
	var ext []time.Time // extension entries since the last conversation message
	for _, l := range lines(b)[1:] {
		m := obj(t, l)
		persist, _ := time.Parse(time.RFC3339Nano, m["timestamp"].(string))
		msg, _ := m["message"].(map[string]any)
		switch {
		case m["type"] == "custom" || m["type"] == "custom_message":
			ext = append(ext, persist)
		case msg != nil && msg["role"] == "user":
			ts, _ := msg["timestamp"].(json.Number).Int64()
			for _, e := range ext {
				if !e.Before(time.UnixMilli(ts)) {
					between++
					break
				}
			}
			ext = nil
		case msg != nil && msg["role"] != "system":
			ext = nil
		}
	}
	if between == 0 {
		t.Error("no extension entry between a prompt's creation and its persistence")
	}
	tr := traceBytes(t, b, Config{})
	for i, r := range runs(t, tr, len(injectPrompts)) {
		if r.str("pi.end_reason") != "settled" || r.str("pi.outcome") != "ok" {
			t.Errorf("run %d: %s, %s", i, r.str("pi.end_reason"), r.str("pi.outcome"))
		}
	}
}

// corpusTrace traces a session file into span trees.
func corpusTrace(t *testing.T, b []byte) ([]*spantree.Node, Stats) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	ids := spanid.NewGenerator(nil)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(ids))
	tr := New(Config{TracerProvider: tp})
	feed(tr, b)
	tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
	return spantree.Recorded(t, rec), tr.Stats()
}

// sameKeys are what a derived file must map to as its source does: how
// each run went, and what it counted.
var sameKeys = append([]string{
	"pi.tool_calls", "pi.tool_errors", "pi.turns", "gen_ai.usage.input_tokens",
	"gen_ai.usage.output_tokens", "gen_ai.conversation.id", "pi.branch",
}, spantree.Keys...)

func readCorpus(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The real Pi with inject.ts: one settled run per prompt, with the tree
// its golden file holds. Pi 0.73 persists the extension's custom message
// after the prompt's creation and before the prompt (it looked queued);
// both versions persist custom entries there, and a custom message whose
// display is a string (it was damaged, and split the file into branches).
func TestInjectCorpus(t *testing.T) {
	for _, v := range []string{"1.6.0", "0.73"} {
		t.Run(v, func(t *testing.T) {
			b := readCorpus(t, "inject-"+v+".jsonl")
			checkInject(t, b)
			forest, st := corpusTrace(t, b)
			spantree.Golden(t, filepath.Join(corpusDir(), "inject-"+v+".tree"), forest)
			if st.Damaged != 0 || st.Repeated != 0 || st.Runs != int64(len(injectPrompts)) {
				t.Errorf("stats %+v", st)
			}
			// Pi's stdout of the same run agrees.
			file := summarise(traceBytes(t, b, Config{}).roots)
			stream := summarise(traceStream(t, readCorpus(t, "inject-"+v+".stream.jsonl")))
			for _, c := range [][2][]string{{file.roots, stream.roots}, {file.chats, stream.chats}, {file.tools, stream.tools}} {
				if strings.Join(c[0], "\n") != strings.Join(c[1], "\n") {
					t.Errorf("file and stream differ:\n  %s\nstream:\n  %s", strings.Join(c[0], "\n  "), strings.Join(c[1], "\n  "))
				}
			}
			// The extension's messages are events of the run they were
			// written for, each in one run.
			for i, r := range forest {
				n := len(r.EventsNamed("pi.custom_message"))
				if n != 2 {
					t.Errorf("run %d has %d custom messages, want 2 (inject-context, inject-prompt)", i, n)
				}
			}
		})
	}
}

// Files derived from the real ones (see derive) map to the very runs of
// their source.
func TestDerivedCorpus(t *testing.T) {
	for _, v := range []string{"1.6.0", "0.73"} {
		src, _ := corpusTrace(t, readCorpus(t, "inject-"+v+".jsonl"))
		want := spantree.Render(src, sameKeys...)
		for _, kind := range []string{"resaved", "repeated", "reissued", "mistyped"} {
			t.Run(v+"/"+kind, func(t *testing.T) {
				b := readCorpus(t, "inject-"+v+"."+kind+".jsonl")
				forest, st := corpusTrace(t, b)
				if got := spantree.Render(forest, sameKeys...); got != want {
					t.Errorf("trees differ from the source's:\n%s\nwant:\n%s", got, want)
				}
				if st.Damaged != 0 {
					t.Errorf("%d damaged", st.Damaged)
				}
				switch kind {
				case "resaved":
					for _, r := range forest {
						if r.Str("pi.session.parent_id") != "parent-1" || len(r.Links) != 0 {
							t.Errorf("%s: parent %q, links %v", r.Name, r.Str("pi.session.parent_id"), r.Links)
						}
					}
				case "repeated":
					src := readCorpus(t, "inject-"+v+".jsonl")
					if want := int64(len(lines(b)) - len(lines(src))); st.Repeated != want {
						t.Errorf("%d repeated, want %d", st.Repeated, want)
					}
				case "reissued":
					if st.Repeated != 1 {
						t.Errorf("%d repeated, want the 1 tool result", st.Repeated)
					}
				case "mistyped":
					if st.Mistyped == 0 {
						t.Error("no entry counted as mistyped")
					}
				}
			})
		}
	}
}
