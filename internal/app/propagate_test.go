package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
	"github.com/pi-otel/pi-otel/internal/toolctx"
)

// A session file's bash calls are published from the FileMapper's own
// decoding, with the span the file's run will give them; a hook's
// question about the file waits until it is mapped up to its size when
// asked, and one about a file outside the folders followed does not.
func TestSessionFileCallsAndCaughtUp(t *testing.T) {
	r, err := toolctx.Open(toolctx.Options{Base: filepath.Join(t.TempDir(), "ctx"), Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cc := &callContexts{run: r}
	folder := t.TempDir()
	cc.followFiles([]string{folder})
	sp := quietSessionPipeline(t, cc)

	now := time.Now().UTC()
	ts := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
	const sid = "0198a2b4-1111-7000-8000-000000000001"
	lines := []string{
		`{"type":"session","version":3,"id":"` + sid + `","timestamp":"` + ts(0) + `","cwd":"/tmp"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"` + ts(time.Millisecond) + `","message":{"role":"user","content":"go","timestamp":1}}`,
		`{"type":"message","id":"a1","parentId":"u1","timestamp":"` + ts(2*time.Millisecond) + `","message":{"role":"assistant","stopReason":"toolUse","timestamp":2,"content":[` +
			`{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"make test"}},` +
			`{"type":"toolCall","id":"c2","name":"read","arguments":{"path":"x","command":"not bash"}},` +
			`{"type":"toolCall","name":"bash","arguments":{"command":"no id"}},` +
			`{"type":"toolCall","id":"c4","name":"bash","arguments":{"command":4}}]}}`,
		`{"type":"message","id":"r1","parentId":"a1","timestamp":"` + ts(3*time.Millisecond) + `","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[],"timestamp":3}}`,
	}
	path := filepath.Join(folder, "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "other.jsonl")
	if err := os.WriteFile(elsewhere, []byte(lines[0]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cc.files.sync(context.Background(), toolctx.Question{File: elsewhere}) // returns: not followed
	c := sp.file(sessionwatch.TracerSpec{Path: path}, nil)
	synced := make(chan struct{})
	go func() {
		cc.files.sync(context.Background(), toolctx.Question{File: path})
		close(synced)
	}()
	var off int64
	feed := func(line string) {
		c.Line(off, []byte(line))
		off += int64(len(line)) + 1
	}
	for i, l := range lines {
		select {
		case <-synced:
			t.Fatalf("a question was answered after %d of %d lines", i, len(lines))
		default:
		}
		feed(l)
		if i != 2 {
			continue
		}
		sc, ok := c.FileMapper.ToolContext("c1")
		if !ok {
			t.Fatal("no context for c1")
		}
		entries := published(t, r.Dir())
		if want := []string{traceparentOf(sc)}; strings.Join(entries, ",") != strings.Join(want, ",") {
			t.Errorf("published %q, want %q (c1's only)", entries, want)
		}
	}
	<-synced
}

// quietSessionPipeline is watch's pipeline, exporting nothing, that
// publishes bash calls through cc; both close with the test.
func quietSessionPipeline(t *testing.T, cc *callContexts) *sessionPipeline {
	t.Helper()
	cfg := configtest.Default()
	cfg.Traces.Exporter = telemetry.ExporterNone
	cfg.Quiet = true
	sp, err := newSessionPipeline(Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}, cfg, sessionConfig{Calls: cc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.summary(nil); cc.close() })
	return sp
}

// published is the trace context of each entry of a run's directory.
func published(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "c.") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		tp, _, _ := strings.Cut(string(b), "\n")
		out = append(out, tp)
	}
	return out
}

func traceparentOf(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// TestWatchLeavesHistoryUnmarked: watch's backfill makes no directory for
// a session nobody wrote lately; once Pi writes to it again, its calls
// are published.
func TestWatchLeavesHistoryUnmarked(t *testing.T) {
	base := filepath.Join(t.TempDir(), "ctx")
	s, err := toolctx.OpenSessions(toolctx.Options{Base: base, Wait: time.Second}, filepath.Join(t.TempDir(), toolctx.HookName))
	if err != nil {
		t.Fatal(err)
	}
	sp := quietSessionPipeline(t, &callContexts{sessions: s})

	const sid = "0198a2b4-2222-7000-8000-000000000002"
	then := time.Now().Add(-48 * time.Hour).UTC()
	lines := []string{
		`{"type":"session","version":3,"id":"` + sid + `","timestamp":"` + then.Format(time.RFC3339Nano) + `","cwd":"/tmp"}`,
		`{"type":"message","id":"u1","parentId":null,"timestamp":"` + then.Format(time.RFC3339Nano) + `","message":{"role":"user","content":"go","timestamp":1}}`,
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, then, then); err != nil {
		t.Fatal(err)
	}
	c := sp.file(sessionwatch.TracerSpec{Path: path}, nil)
	var off int64
	for _, l := range lines {
		c.Line(off, []byte(l))
		off += int64(len(l)) + 1
	}
	dir := filepath.Join(base, "s-"+sid)
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("a session last written two days ago got a directory")
	}

	// Resumed: a new call is published, in the session's directory.
	now := time.Now().UTC()
	more := `{"type":"message","id":"a2","parentId":"u1","timestamp":"` + now.Format(time.RFC3339Nano) + `","message":{"role":"assistant","stopReason":"toolUse","timestamp":2,"content":[` +
		`{"type":"toolCall","id":"c9","name":"bash","arguments":{"command":"make"}}]}}`
	c.Line(off, []byte(more))
	if _, err := os.Stat(filepath.Join(dir, "c.1")); err != nil {
		t.Errorf("resumed, the session's call is not published: %v", err)
	}
}
