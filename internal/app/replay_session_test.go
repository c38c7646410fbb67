package app

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

func replayArgs(t *testing.T, in string, flags ...string) (code int, spans, stderr string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "spans.jsonl")
	code, _, stderr = mainWith(nil, append(append([]string{"replay", "--traces-exporter", "file", "--traces-file", out}, flags...), in)...)
	b, _ := os.ReadFile(out)
	return code, string(b), stderr
}

var traceIDRe = regexp.MustCompile(`"traceId":\s*"([0-9a-f]{32})"`)

func traceIDs(spans string) []string {
	seen := map[string]bool{}
	for _, m := range traceIDRe.FindAllStringSubmatch(spans, -1) {
		seen[m[1]] = true
	}
	var out []string
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// A session file is recognised by its content and traced: one trace per
// run, under the stream's span names, with the session id as the
// conversation id; the same file traced twice gives the same ids.
func TestReplaySessionFile(t *testing.T) {
	in := repo.Path("testdata/sessions/pi-1.6.0/overflow.jsonl")
	code, spans, stderr := replayArgs(t, in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{`"invoke_agent pi"`, `"pi.compaction"`, `"chat fake-model"`, `"gen_ai.conversation.id"`, `"pi.project"`} {
		if !strings.Contains(spans, want) {
			t.Errorf("no %s in the exported spans", want)
		}
	}
	if !strings.Contains(stderr, "2 traces") {
		t.Errorf("summary %q, want 2 traces (two runs)", stderr)
	}
	first := traceIDs(spans)
	if len(first) != 2 {
		t.Fatalf("%d trace ids, want 2", len(first))
	}
	_, again, _ := replayArgs(t, in)
	if got := traceIDs(again); strings.Join(got, ",") != strings.Join(first, ",") {
		t.Errorf("second replay gave trace ids %v, first %v", got, first)
	}
	// The stream of the same run still replays as a stream, with random ids.
	code, stream, stderr := replayArgs(t, repo.Path("testdata/sessions/pi-1.6.0/overflow.stream.jsonl"))
	if code != 0 || !strings.Contains(stream, `"pi.compaction"`) {
		t.Fatalf("stream replay: exit %d, %s", code, stderr)
	}
	if strings.Contains(stream, `"pi.source"`) {
		t.Error("the stream was traced as a session file")
	}
}

// A file that is neither gets one clear line and a non-zero exit, never a
// silent "0 traces".
func TestReplayRejectsOtherFiles(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"passwd":      "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
		"empty":       "",
		"other.jsonl": `{"level":"info","msg":"hello"}` + "\n" + `{"type":"user","message":"hi"}` + "\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := replayArgs(t, p)
		if code == 0 {
			t.Errorf("%s: exit 0", name)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if len(lines) != 1 || !strings.Contains(stderr, "neither a Pi session file nor a Pi event stream") || !strings.Contains(stderr, `{"type":"session"`) {
			t.Errorf("%s: stderr %q, want one line naming what was expected", name, stderr)
		}
	}
}

// Damaged lines are reported and skipped; a session with no prompt says so.
func TestReplaySessionFileDamagedAndEmpty(t *testing.T) {
	dir := t.TempDir()
	b := repo.Read(t, "testdata/sessions/pi-1.6.0/text.jsonl")
	lines := strings.SplitAfter(string(b), "\n")
	damaged := strings.Join(lines[:2], "") + `{"type":"message","id":"x","parentId":null,"message":{"role":"us` + "\n" + strings.Join(lines[2:], "")
	p := filepath.Join(dir, "damaged.jsonl")
	if err := os.WriteFile(p, []byte(damaged), 0o644); err != nil {
		t.Fatal(err)
	}
	code, spans, stderr := replayArgs(t, p)
	if code != 0 || !strings.Contains(stderr, "1 damaged lines skipped") || !strings.Contains(spans, `"invoke_agent pi"`) {
		t.Errorf("damaged file: exit %d, stderr %q", code, stderr)
	}
	p = filepath.Join(dir, "header.jsonl")
	if err := os.WriteFile(p, []byte(lines[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = replayArgs(t, p)
	if code != 0 || !strings.Contains(stderr, "no prompt in it") {
		t.Errorf("header-only file: exit %d, stderr %q", code, stderr)
	}
}

// A version 1 file's entries take their ids from their offsets. Replay
// places each line where it stands in the file, as watch does, whatever
// it passes over on the way (CR line ends, blank lines, a line over
// --max-line-size), so the two give the same span ids.
func TestReplayPlacesLinesAsWatch(t *testing.T) {
	t.Parallel()
	var lines []string
	for i, l := range strings.Split(strings.TrimSpace(string(repo.Read(t, "testdata/sessions/pi-1.6.0/two-prompts.jsonl"))), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			delete(m, "version") // version 1: entries have no ids of their own
		} else {
			delete(m, "id")
			delete(m, "parentId")
		}
		if i > 0 && strings.Contains(l, `"text":"Second prompt"`) {
			// Kept as an event by watch; skipped by replay for its length.
			lines = append(lines, `{"type":"x-pad","pad":"`+strings.Repeat("p", 8<<10)+`"}`)
		}
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
		if i == 1 {
			lines = append(lines, "")
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "v1.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\r\n")+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Written long ago: watch closes its last run as replay does.
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(file, old, old); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "replay.jsonl")
	code, _, stderr := mainWith(nil, "replay", "--max-line-size", "4KiB", "--traces-exporter", "file", "--traces-file", out, file)
	if code != 0 || !strings.Contains(stderr, "--max-line-size") {
		t.Fatalf("exit %d, the long line not said: %s", code, stderr)
	}
	replayed := historytest.Exported(t, out)

	cfg := configtest.Default()
	cfg.Quiet = true
	cfg.Traces.Exporter, cfg.Traces.File = telemetry.ExporterFile, filepath.Join(t.TempDir(), "watch.jsonl")
	cfg.Metrics.Exporter = telemetry.ExporterNone
	backfill(t, dir, cfg, 0)
	watched := historytest.Exported(t, cfg.Traces.File)
	if len(replayed) == 0 || !maps.Equal(replayed, watched) {
		t.Errorf("replay gave %d spans, watch %d; the same ids: %v", len(replayed), len(watched), maps.Equal(replayed, watched))
	}
}
