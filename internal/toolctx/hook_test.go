package toolctx

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

const runLevel = "00-11111111111111111111111111111111-2222222222222222-01"

func openRun(t *testing.T, wait time.Duration) *Run {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("this test needs bash on PATH: %v", err)
	}
	base := filepath.Join(t.TempDir(), "pi-otel")
	r, err := Open(Options{Base: base, Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	r.SetSync(atOnce)
	t.Cleanup(func() { r.Close() })
	return r
}

// atOnce answers a question at once: nothing more to read.
func atOnce(context.Context, Question) {}

// bashEnv is Pi's environment under pi-otel: the run-level TRACEPARENT and
// the hook's variables, over a clean base.
func bashEnv(r *Run, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TRACEPARENT=" + runLevel}
	env = append(env, extra...)
	return append(env, r.Env(func(k string) string { v, _ := lookupIn(env, k); return v })...)
}

func lookupIn(env []string, k string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v, true
		}
	}
	return "", false
}

// runBash runs bash -c command as Pi's bash tool does.
func runBash(t *testing.T, env []string, command string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Env = env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func spanContext(t *testing.T, sid byte, flags trace.TraceFlags) trace.SpanContext {
	t.Helper()
	ts, err := trace.ParseTraceState("vendor=x")
	if err != nil {
		t.Fatal(err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, SpanID: trace.SpanID{sid, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: flags, TraceState: ts,
	})
}

func traceparent(sc trace.SpanContext) string {
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

func TestHookGivesTheCallsContext(t *testing.T) {
	r := openRun(t, time.Second)
	const cmd = "cd / && printenv TRACEPARENT TRACESTATE"
	sc := spanContext(t, 1, 0) // an unsampled caller stays unsampled
	r.Call("call-1", cmd, sc)
	out, errOut, code := runBash(t, bashEnv(r), cmd)
	if want := traceparent(sc) + "\nvendor=x\n"; out != want || errOut != "" || code != 0 {
		t.Fatalf("got %q %q %d, want %q", out, errOut, code, want)
	}
	if m := r.Misses(); m.Total() != 0 {
		t.Errorf("misses %+v", m)
	}
}

func TestHookParallelCallsOfOneLength(t *testing.T) {
	r := openRun(t, 5*time.Second)
	// Equal lengths: one pair differs in a sampled byte, the other pair
	// is identical, so only a claim tells them apart.
	cmds := []string{"printenv TRACEPARENT # a", "printenv TRACEPARENT # b", "printenv TRACEPARENT # c", "printenv TRACEPARENT # c"}
	want := map[string]bool{}
	for i, c := range cmds {
		id := "call-" + string(rune('0'+i))
		sc := spanContext(t, byte(10+i), trace.FlagsSampled)
		r.Call(id, c, sc)
		want[traceparent(sc)+"\n"] = true
	}
	var wg sync.WaitGroup
	outs := make([]string, len(cmds))
	for i, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], _, _ = runBash(t, bashEnv(r), c)
		}()
	}
	wg.Wait()
	if outs[0] == outs[1] || outs[2] == outs[3] {
		t.Errorf("parallel calls share a context: %q", outs)
	}
	for i, o := range outs[:2] {
		sc := spanContext(t, byte(10+i), trace.FlagsSampled)
		if o != traceparent(sc)+"\n" {
			t.Errorf("call %d got %q, want its own %s", i, o, traceparent(sc))
		}
	}
	for _, o := range outs[2:] {
		if !want[o] || o == outs[0] || o == outs[1] {
			t.Errorf("identical call got %q, want one of the two identical calls' contexts", o)
		}
	}
}

// TestHookDoesNoHarm runs commands with and without the hook: what they
// print, on both streams, and their exit codes are the same, the user's
// BASH_ENV is read, and the shell's options are as bash left them.
func TestHookDoesNoHarm(t *testing.T) {
	r := openRun(t, time.Second)
	home := t.TempDir()
	userEnv := filepath.Join(home, "env.sh")
	if err := os.WriteFile(userEnv, []byte("export FROM_USER_ENV=yes\nshopt -s extglob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmds := []string{
		`echo "$-"; set -o; shopt; echo "[$FROM_USER_ENV] [$BASH_ENV]"; env | grep -c '^PI_OTEL_' || true`,
		`set -euo pipefail; cd /; pwd; echo out; echo err >&2; exit 3`,
		`set -u; echo "${UNSET_VAR:-default}"; false | true; echo $?`,
		"printf 'no newline at the end'",
		"bash -c 'echo nested \"[$FROM_USER_ENV]\"'",
	}
	for i, cmd := range cmds {
		id := "call-" + itoa(i)
		r.Call(id, cmd, spanContext(t, byte(i+1), trace.FlagsSampled))
		plain := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TRACEPARENT=" + runLevel, "BASH_ENV=" + userEnv}
		o1, e1, c1 := runBash(t, plain, cmd)
		o2, e2, c2 := runBash(t, bashEnv(r, "HOME="+home, "BASH_ENV="+userEnv), cmd)
		if o1 != o2 || e1 != e2 || c1 != c2 {
			t.Errorf("%s:\nwithout the hook %q %q %d\nwith it          %q %q %d", cmd, o1, e1, c1, o2, e2, c2)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestHookStaysForAWrapper: a bash that is not a tool call (a script that
// starts Pi, say) keeps the hook in Pi's environment.
func TestHookStaysForAWrapper(t *testing.T) {
	r := openRun(t, time.Second)
	const cmd = "printenv TRACEPARENT"
	r.Call("inner", cmd, spanContext(t, 9, trace.FlagsSampled))
	out, errOut, _ := runBash(t, bashEnv(r), "bash -c 'printenv TRACEPARENT'")
	if want := traceparent(spanContext(t, 9, trace.FlagsSampled)) + "\n"; out != want || errOut != "" {
		t.Errorf("the call below a wrapper got %q %q, want %q", out, errOut, want)
	}
}

// TestHookKeepsWhatItInherits: an entry published with Keep leaves the
// inherited context alone, and counts no miss.
func TestHookKeepsWhatItInherits(t *testing.T) {
	r := openRun(t, time.Second)
	const cmd = "printenv TRACEPARENT"
	r.Keep("bash-1", cmd)
	if o, _, _ := runBash(t, bashEnv(r), cmd); o != runLevel+"\n" {
		t.Errorf("got %q, want the inherited %s", o, runLevel)
	}
	if m := r.Misses(); m.Total() != 0 {
		t.Errorf("misses %+v", m)
	}
}
