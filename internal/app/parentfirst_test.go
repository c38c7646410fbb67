package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
)

// A history whose child session file the walk finds before its parent's
// is read parents first: the parent's trace notes the tool that ran the
// child, so no parent's file is read a second time to find it.
func TestBackfillReadsNoParentTwice(t *testing.T) {
	dir := t.TempDir()
	parentPath := filepath.Join(dir, "2026-12-01T10-00-00-000Z_s1.jsonl")
	child := filepath.Join(dir, "2026-12-01T09-59-59-000Z_child-1.jsonl") // first by name
	files := map[string]string{
		child: `{"type":"session","version":3,"id":"child-1","timestamp":"2026-12-01T10:00:01.000Z","cwd":"/p","parentSession":"` + parentPath + `"}
{"type":"message","id":"cu","parentId":null,"timestamp":"2026-12-01T10:00:01.200Z","message":{"role":"user","content":"look","timestamp":1796119201200}}
{"type":"message","id":"ca","parentId":"cu","timestamp":"2026-12-01T10:00:01.500Z","message":{"role":"assistant","content":[{"type":"text","text":"found"}],"provider":"p","model":"m","usage":{"input":3,"output":4,"cost":{"total":2}},"stopReason":"stop","timestamp":1796119201300,"durationMs":200}}
`,
		parentPath: `{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-01T10:00:00.100Z","message":{"role":"user","content":"go","timestamp":1796119200100}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T10:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"subagent","arguments":{}}],"provider":"p","model":"m","usage":{"input":10,"output":1,"cost":{"total":1}},"stopReason":"toolUse","timestamp":1796119200200,"durationMs":100}}
{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-12-01T10:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"subagent","content":[{"type":"text","text":"found"}],"details":{"mode":"single","results":[{"agent":"scout","sessionFile":"` + child + `"}]},"isError":false,"timestamp":1796119202000,"durationMs":1900}}
{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-12-01T10:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m","usage":{"input":20,"output":1,"cost":{"total":1}},"stopReason":"stop","timestamp":1796119202100,"durationMs":50}}
`,
	}
	for p, b := range files {
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := configtest.Default()
	cfg.Quiet = true
	cfg.Traces.Exporter, cfg.Metrics.Exporter, cfg.Logs.Exporter = telemetry.ExporterNone, telemetry.ExporterNone, telemetry.ExporterNone
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sp, fc := sinceAll(ctx, t, Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}, cfg, dir, filepath.Join(t.TempDir(), "state.json"))
	fc.Ready = cancel // the history is read
	fc.Exited = func() bool { return true }
	f := sessionwatch.New(fc)
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	sp.summary(nil)
	if n := sp.parents.Reads(); n != 0 {
		t.Errorf("the parent's file was read again %d times to find the child's tool", n)
	}
	if s := sp.tel.Stats(); s.Ended == 0 {
		t.Fatal("nothing traced")
	}
}

// A child whose parent an earlier watch traced finds its link in the
// state: after a restart, no parent's file is read for it. The child's
// file appears only then (its subagent wrote it outside the folders
// watched, and it was copied in), so only the first process saw the
// parent's tool.
func TestRestartReadsNoParentTracedBefore(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	state := filepath.Join(t.TempDir(), "state.json")
	parentPath := filepath.Join(dir, "2026-12-01T10-00-00-000Z_s1.jsonl")
	away := filepath.Join(elsewhere, "2026-12-01T10-00-01-000Z_child-1.jsonl")
	child := `{"type":"session","version":3,"id":"child-1","timestamp":"2026-12-01T10:00:01.000Z","cwd":"/p","parentSession":"` + parentPath + `"}
{"type":"message","id":"cu","parentId":null,"timestamp":"2026-12-01T10:00:01.200Z","message":{"role":"user","content":"look","timestamp":1796119201200}}
{"type":"message","id":"ca","parentId":"cu","timestamp":"2026-12-01T10:00:01.500Z","message":{"role":"assistant","content":[{"type":"text","text":"found"}],"provider":"p","model":"m","usage":{"input":3,"output":4,"cost":{"total":2}},"stopReason":"stop","timestamp":1796119201300,"durationMs":200}}
`
	parent := `{"type":"session","version":3,"id":"s1","timestamp":"2026-12-01T10:00:00.000Z","cwd":"/p"}
{"type":"message","id":"u1","parentId":null,"timestamp":"2026-12-01T10:00:00.100Z","message":{"role":"user","content":"go","timestamp":1796119200100}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-12-01T10:00:01.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"subagent","arguments":{}}],"provider":"p","model":"m","usage":{"input":10,"output":1,"cost":{"total":1}},"stopReason":"toolUse","timestamp":1796119200200,"durationMs":100}}
{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-12-01T10:00:02.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"subagent","content":[{"type":"text","text":"found"}],"details":{"mode":"single","results":[{"agent":"scout","sessionFile":"` + away + `"}]},"isError":false,"timestamp":1796119202000,"durationMs":1900}}
{"type":"message","id":"a2","parentId":"r1","timestamp":"2026-12-01T10:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m","usage":{"input":20,"output":1,"cost":{"total":1}},"stopReason":"stop","timestamp":1796119202100,"durationMs":50}}
`
	for p, b := range map[string]string{away: child, parentPath: parent} {
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg := configtest.Default()
	cfg.Quiet = true
	cfg.Traces.Exporter, cfg.Metrics.Exporter, cfg.Logs.Exporter = telemetry.ExporterNone, telemetry.ExporterNone, telemetry.ExporterNone
	env := Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}
	watch := func() *sessionPipeline {
		t.Helper()
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		sp, fc := sinceAll(ctx, t, env, cfg, dir, state)
		fc.Ready = cancel
		fc.Exited = func() bool { return true }
		if err := sessionwatch.New(fc).Run(ctx); err != nil {
			t.Fatal(err)
		}
		sp.summary(nil)
		return sp
	}

	first := watch()
	if s := first.tel.Stats(); s.Ended == 0 {
		t.Fatal("the parent was not traced")
	}
	// The link the first process gives the child: noted from the
	// parent's trace, no read.
	want, ok := first.parents.Find(parentPath, "child-1")
	if !ok || first.parents.Reads() != 0 {
		t.Fatalf("first process: link %v %v after %d reads, want one noted", want, ok, first.parents.Reads())
	}

	if err := os.WriteFile(filepath.Join(dir, filepath.Base(away)), []byte(child), 0o600); err != nil {
		t.Fatal(err)
	}
	second := watch()
	if n := second.parents.Reads(); n != 0 {
		t.Errorf("after a restart the parent's file was read %d times for its child", n)
	}
	got, ok := second.parents.Find(parentPath, "child-1")
	if !ok || !got.Equal(want) {
		t.Errorf("after a restart the child links to %v (%v), want %v", got, ok, want)
	}
	// Found, the child is left to its parent's trace: nothing is traced.
	if s := second.tel.Stats(); s.Ended != 0 {
		t.Errorf("the child was traced on its own: %d spans", s.Ended)
	}
}
