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
