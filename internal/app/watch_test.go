package app

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
	"github.com/pi-otel/pi-otel/internal/testutil/historytest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// TestConfigurationDocListsWatchFlags keeps docs/configuration.md true to
// the watch command's own flags and variables.
func TestConfigurationDocListsWatchFlags(t *testing.T) {
	doc := repo.Read(t, "docs/configuration.md")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	config.RegisterWatchFlags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(string(doc), "`--"+f.Name) {
			t.Errorf("docs/configuration.md does not document --%s", f.Name)
		}
		i := strings.Index(f.Usage, "(PI_OTEL_")
		if i < 0 {
			t.Errorf("--%s names no variable", f.Name)
			return
		}
		v := f.Usage[i+1:]
		v = v[:strings.IndexAny(v, ";)")]
		if !strings.Contains(string(doc), "`"+v+"`") {
			t.Errorf("docs/configuration.md does not name %s", v)
		}
	})
	if n != 6 {
		t.Fatalf("%d watch flags", n)
	}
}

func TestPiFlags(t *testing.T) {
	argv := []string{"--provider", "x", "--mode=json", "--session-dir", "/s", "--continue", "--", "--mode", "rpc"}
	if m := piMode(argv); m != "json" {
		t.Errorf("piMode = %q", m)
	}
	if m := piMode([]string{"-p", "hi"}); m != "" {
		t.Errorf("piMode of -p = %q", m)
	}
	if v, ok := piFlag(argv, false, "--session-dir"); !ok || v != "/s" {
		t.Errorf("--session-dir = %q %v", v, ok)
	}
	if _, ok := piFlag(argv, true, "--continue", "-c"); !ok {
		t.Error("--continue not found")
	}
	if _, ok := piFlag([]string{"--", "--no-session"}, true, "--no-session"); ok {
		t.Error("a flag after -- is Pi's prompt, not a flag")
	}
}

func TestPinSession(t *testing.T) {
	dir := t.TempDir()
	o := &sessionwatch.Owner{Cwd: "/w"}
	got := pinSession([]string{"pi", "--session-id", "abc"}, dir, o, true)
	if len(got) != 3 || len(o.IDs) != 1 || o.IDs[0] != "abc" {
		t.Errorf("--session-id: argv %v, ids %v", got, o.IDs)
	}
	o = &sessionwatch.Owner{Cwd: "/w"}
	pinSession([]string{"pi", "--session", "sub/x.jsonl"}, dir, o, true)
	if len(o.Paths) != 1 || !filepath.IsAbs(o.Paths[0]) {
		t.Errorf("--session path: %v", o.Paths)
	}
	// A command that is not a recognisable Pi 1.x gets no extra flag.
	o = &sessionwatch.Owner{Cwd: "/w"}
	if got := pinSession([]string{"sh", "-c", "pi"}, dir, o, true); len(got) != 3 || len(o.IDs) != 0 {
		t.Errorf("argv %v, ids %v", got, o.IDs)
	}
	// Pi 1.x, a new session: an id of pi-otel's, and nothing written in
	// Pi's folder (Pi creates the file at its first message).
	for version, want := range map[string]bool{"1.6.0": true, "1.0.3": true, "0.73.1": false} {
		cli := fakePi(t, version)
		o = &sessionwatch.Owner{Cwd: "/w"}
		got := pinSession([]string{cli, "hi"}, dir, o, true)
		if !want {
			if len(got) != 2 || len(o.IDs) != 0 {
				t.Errorf("Pi %s: argv %v, ids %v: want it untouched", version, got, o.IDs)
			}
			continue
		}
		if len(got) != 4 || got[1] != "--session-id" || len(o.IDs) != 1 || got[2] != o.IDs[0] || o.IDs[0][14] != '7' {
			t.Errorf("Pi %s: argv %v, ids %v: want --session-id with a version 7 UUID", version, got, o.IDs)
		}
	}
	// -p: Pi would print a warning about the id that stays on screen.
	o = &sessionwatch.Owner{Cwd: "/w"}
	if got := pinSession([]string{fakePi(t, "1.6.0"), "-p", "hi"}, dir, o, true); len(got) != 3 || len(o.IDs) != 0 {
		t.Errorf("-p: argv %v, ids %v: want it untouched", got, o.IDs)
	}
	// No terminal: print mode too.
	if got := pinSession([]string{fakePi(t, "1.6.0"), "hi"}, dir, o, false); len(got) != 2 || len(o.IDs) != 0 {
		t.Errorf("no terminal: argv %v, ids %v: want it untouched", got, o.IDs)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("pi-otel wrote in Pi's session folder: %v", ents)
	}
}

// fakePi is a Pi package's layout, as knowsSessionID reads it: a cli.js
// beside a package.json naming the version.
func fakePi(t *testing.T, version string) string {
	t.Helper()
	pkg := filepath.Join(t.TempDir(), "node_modules", "@earendil-works", "pi-coding-agent")
	if err := os.MkdirAll(filepath.Join(pkg, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"@earendil-works/pi-coding-agent","version":"`+version+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := filepath.Join(pkg, "dist", "cli.js")
	if err := os.WriteFile(cli, []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return cli
}

func TestWritesNoSession(t *testing.T) {
	for args, want := range map[string]bool{
		"install npm:x":         true,
		"config":                true,
		"--version":             true,
		"--provider p --help":   true,
		"--list-models":         true,
		"":                      false,
		"-p hello":              false,
		"--continue":            false,
		"-- --help":             false, // after --, a prompt
		"--model m list things": false, // a prompt, not the list command
	} {
		if got := writesNoSession(strings.Fields(args)); got != want {
			t.Errorf("writesNoSession(%q) = %v, want %v", args, got, want)
		}
	}
}

// TestRunTUIPiNotFound: the TUI path reports a missing Pi as the shell
// would, after the summary, and leaves nothing behind.
func TestRunTUIPiNotFound(t *testing.T) {
	sessions := t.TempDir()
	var stdout, stderr strings.Builder
	code := Main(t.Context(), Env{
		Args:   []string{"run", "--traces-exporter", "none", "--", "/nonexistent/pi"},
		Stdin:  strings.NewReader(""),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(k string) string {
			return map[string]string{"PI_CODING_AGENT_SESSION_DIR": sessions, "HOME": t.TempDir()}[k]
		},
	})
	if code != 127 {
		t.Errorf("exit %d, want 127\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "/nonexistent/pi") || !strings.Contains(stderr.String(), "pi-otel: 0 traces") {
		t.Errorf("stderr %q", stderr.String())
	}
	if ents, _ := os.ReadDir(sessions); len(ents) != 0 {
		t.Errorf("left behind in the session dir: %v", ents)
	}
}

// A damaged line of a watched session file counts as a malformed record in
// the health metrics, as it does in replay, summed over every file.
func TestWatchCountsDamagedLines(t *testing.T) {
	cfg := configtest.Default()
	cfg.Traces.Exporter = telemetry.ExporterNone
	cfg.Quiet = true
	sp, err := newSessionPipeline(Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}, cfg, sessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.flush(context.Background(), true)
	src := bytes.Split(bytes.TrimRight(repo.Read(t, "testdata/sessions/pi-1.6.0/two-prompts.jsonl"), "\n"), []byte("\n"))
	feed := func(damage ...string) {
		tr := sp.file(sessionwatch.TracerSpec{}, nil)
		var off int64
		for _, l := range append(append(src[:1:1], bytesOf(damage)...), src[1:]...) {
			tr.Line(off, l)
			off += int64(len(l)) + 1
		}
		tr.Close(false)
	}
	feed(`{"type":"message","id":`, "not json at all")
	feed(`{"type":`)
	if got, want := sp.counts.Damaged.Load(), int64(3); got != want {
		t.Errorf("damaged = %d, want %d", got, want)
	}
	if got, want := sp.counts.Lines.Load(), int64(2*len(src)+3); got != want {
		t.Errorf("lines = %d, want %d", got, want)
	}
}

func bytesOf(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// The flush between runs exports the queued spans even when an attribute
// length limit wraps the tracer provider (it once looked for ForceFlush on
// the wrapper, found none and flushed nothing).
func TestWatchFlushWithAttributeLimit(t *testing.T) {
	for _, limit := range []int{0, 64} {
		t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
			cfg := configtest.Default()
			cfg.Quiet = true
			cfg.AttributeValueLengthLimit = limit
			cfg.Traces.Exporter, cfg.Traces.File = telemetry.ExporterFile, filepath.Join(t.TempDir(), "traces.jsonl")
			cfg.Metrics.Exporter = telemetry.ExporterNone
			cfg.Batch.ScheduleDelay = time.Hour // only a flush exports
			sp, err := newSessionPipeline(Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}, cfg, sessionConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.flush(context.Background(), true)
			tr := sp.file(sessionwatch.TracerSpec{}, nil)
			var off int64
			for _, l := range bytes.SplitAfter(repo.Read(t, "testdata/sessions/pi-1.6.0/two-prompts.jsonl"), []byte("\n")) {
				tr.Line(off, bytes.TrimSuffix(l, []byte("\n")))
				off += int64(len(l))
			}
			tr.Close(false)
			if err := sp.flush(context.Background(), false); err != nil {
				t.Fatalf("flush: %v", err)
			}
			if got := len(historytest.Exported(t, cfg.Traces.File)); got == 0 || int64(got) != sp.tel.Stats().Ended {
				t.Errorf("after the flush the file holds %d spans, %d ended", got, sp.tel.Stats().Ended)
			}
		})
	}
}
