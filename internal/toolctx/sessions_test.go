package toolctx

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// TestSetupLine: a plain bash whose command starts with the setup line
// of docs/watch.md (Pi's shellCommandPrefix) gets the context watch
// published for its session, and its output is what it would be.
func TestSetupLine(t *testing.T) {
	base := filepath.Join(t.TempDir(), "pi-otel")
	hookPath := filepath.Join(t.TempDir(), "state", "pi-otel", HookName)
	s, err := OpenSessions(Options{Base: base, Wait: time.Second}, hookPath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	prefix := ". " + hookPath + " 2>/dev/null || :\n"
	const cmd = "set -u; printenv TRACEPARENT; echo done"
	sc := spanContext(t, 4, trace.FlagsSampled)
	s.Call("sess-1", "c1", cmd, sc)
	session := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(session, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "TRACEPARENT=" + runLevel, "PI_OTEL_PROPAGATION_DIR=" + base,
		"PI_SESSION_ID=sess-1", "PI_SESSION_FILE=" + session}
	out, errOut, code := runBash(t, env, prefix+cmd)
	if want := traceparent(sc) + "\ndone\n"; out != want || errOut != "" || code != 0 {
		t.Errorf("got %q %q %d, want %q", out, errOut, code, want)
	}
	// A ! command of a session watch has read to the end: at once, as is.
	fi, err := os.Stat(session)
	if err != nil {
		t.Fatal(err)
	}
	s.Seen("sess-1", fi.ModTime())
	if out, _, _ := runBash(t, env, prefix+"printenv TRACEPARENT"); out != runLevel+"\n" {
		t.Errorf("a ! command got %q, want %q", out, runLevel)
	}
	// Without watch's files the setup line changes nothing.
	s.Close()
	if out, errOut, _ := runBash(t, env, prefix+cmd); out != runLevel+"\ndone\n" || errOut != "" {
		t.Errorf("without watch: %q %q", out, errOut)
	}
}

// TestIdleSessionsLeave: a long watch keeps the directories of the
// sessions in use, not of every one it read; an idle session with a call
// still pending keeps its own, and the counts of those removed stay.
func TestIdleSessionsLeave(t *testing.T) {
	base := filepath.Join(t.TempDir(), "pi-otel")
	s, err := OpenSessions(Options{Base: base, Wait: time.Second}, filepath.Join(t.TempDir(), HookName))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s.now = func() time.Time { return now }
	s.Seen("idle", now)
	s.Call("busy", "c1", "make test", spanContext(t, 4, trace.FlagsSampled))
	if err := os.WriteFile(filepath.Join(base, "s-idle", "misses"), []byte("nt"), 0o600); err != nil {
		t.Fatal(err)
	}
	exists := func(id string) bool { _, err := os.Stat(filepath.Join(base, "s-"+id)); return err == nil }

	now = now.Add(idleAfter / 2)
	s.Seen("new1", now)
	if !exists("idle") || !exists("busy") || !exists("new1") {
		t.Fatal("a session not yet idle lost its directory")
	}
	now = now.Add(idleAfter)
	s.Seen("new2", now)
	if exists("idle") {
		t.Error("the idle session kept its directory")
	}
	if !exists("busy") {
		t.Error("a session with a call pending lost its directory")
	}
	if !exists("new1") || !exists("new2") {
		t.Error("sessions in use lost their directories")
	}
	// Used again, it comes back.
	s.Seen("idle", now)
	if !exists("idle") {
		t.Error("a session used again got no directory")
	}
	if m := s.Close(); m.None != 1 || m.Timeout != 1 {
		t.Errorf("misses %+v, want the removed session's 1 none and 1 timeout", m)
	}
}
