package toolctx

import (
	"errors"
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
	s.SetSync(atOnce)
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
	// A ! command: no entry, and watch answers at once.
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
	s.Call("idle", "c0", "true", spanContext(t, 3, trace.FlagsSampled))
	s.Done("c0")
	s.Call("busy", "c1", "make test", spanContext(t, 4, trace.FlagsSampled))
	exists := func(id string) bool { _, err := os.Stat(filepath.Join(base, "s-"+id)); return err == nil }

	now = now.Add(idleAfter / 2)
	s.Call("new1", "c2", "true", spanContext(t, 5, trace.FlagsSampled))
	if !exists("idle") || !exists("busy") || !exists("new1") {
		t.Fatal("a session not yet idle lost its directory")
	}
	now = now.Add(idleAfter)
	s.Call("new2", "c3", "true", spanContext(t, 6, trace.FlagsSampled))
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
	s.Call("idle", "c4", "true", spanContext(t, 7, trace.FlagsSampled))
	if !exists("idle") {
		t.Error("a session used again got no directory")
	}
	s.Close()
}

// TestSecondWatch: a second watch of the user publishes nothing and
// breaks nothing of the first's; once the first has exited, a later watch
// takes over, and nothing of the first removes what it wrote.
func TestSecondWatch(t *testing.T) {
	base := filepath.Join(t.TempDir(), "pi-otel")
	hookPath := filepath.Join(t.TempDir(), HookName)
	first, err := OpenSessions(Options{Base: base, Wait: time.Second}, hookPath)
	if err != nil {
		t.Fatal(err)
	}
	first.Call("sess-1", "c1", "true", spanContext(t, 1, trace.FlagsSampled))
	if _, err := OpenSessions(Options{Base: base, Wait: time.Second}, hookPath); !errors.Is(err, ErrOtherWatch) {
		t.Fatalf("a second watch: %v, want ErrOtherWatch", err)
	}
	for _, name := range []string{"watch.pid", "s-sess-1/c.1", "s-sess-1/index", "ask"} {
		if _, err := os.Lstat(filepath.Join(base, name)); err != nil {
			t.Errorf("after a second watch tried: %v", err)
		}
	}
	first.Close()
	later, err := OpenSessions(Options{Base: base, Wait: time.Second}, hookPath)
	if err != nil {
		t.Fatalf("a watch after the first exited: %v", err)
	}
	defer later.Close()
	later.Call("sess-2", "c2", "true", spanContext(t, 2, trace.FlagsSampled))
	first.Close() // again: a no-op
	for _, name := range []string{"watch.pid", "s-sess-2/c.1", "ask"} {
		if _, err := os.Lstat(filepath.Join(base, name)); err != nil {
			t.Errorf("the later watch lost %s: %v", name, err)
		}
	}
}

// TestSetupLineUnderRun: a bash that pi-otel run started, whose command
// also begins with the setup line, keeps the context run's hook gave it,
// though a watch publishes the same command too.
func TestSetupLineUnderRun(t *testing.T) {
	r := openRun(t, time.Minute)
	base := filepath.Join(t.TempDir(), "pi-otel")
	hookPath := filepath.Join(t.TempDir(), HookName)
	s, err := OpenSessions(Options{Base: base, Wait: time.Second}, hookPath)
	if err != nil {
		t.Fatal(err)
	}
	s.SetSync(atOnce)
	defer s.Close()
	const cmd = "printenv TRACEPARENT"
	prefix := ". " + hookPath + " 2>/dev/null || :\n"
	fromRun, fromWatch := spanContext(t, 1, trace.FlagsSampled), spanContext(t, 2, trace.FlagsSampled)
	r.Call("c", cmd, fromRun)
	s.Call("sess-1", "c", cmd, fromWatch)
	env := bashEnv(r, "PI_OTEL_PROPAGATION_DIR="+base, "PI_SESSION_ID=sess-1", "PI_SESSION_FILE=/x/s.jsonl")
	if o, e, _ := runBash(t, env, prefix+cmd); o != traceparent(fromRun)+"\n" || e != "" {
		t.Errorf("got %q %q, want run's %s", o, e, traceparent(fromRun))
	}
}
