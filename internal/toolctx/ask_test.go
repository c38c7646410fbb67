package toolctx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// collidingPair is two commands of one length (133 bytes, as in
// issue 34) that differ in one byte only, where a hash of 64 evenly
// spaced bytes does not look: pytest of test_module_1 and _2, say.
func collidingPair(t *testing.T, tag string) (string, string) {
	t.Helper()
	const n = 133
	sampled := map[int]bool{}
	for i := range 64 {
		sampled[i*(n-1)/63] = true
	}
	head := "printenv TRACEPARENT; : pytest tests/test_module_"
	for sampled[len(head)] {
		head = strings.Replace(head, " ", "  ", 1)
	}
	base := head + "1.py -k 'slow and not flaky' --maxfail=3 -q --tb=short # " + tag
	for len(base) < n {
		base += "."
	}
	i := len(head)
	return base, base[:i] + "2" + base[i+1:]
}

// TestHookIsExact: two calls whose commands differ only where a sampled
// hash does not look each get their own span, whichever runs first, and
// so do 20 such pairs at once.
func TestHookIsExact(t *testing.T) {
	r := openRun(t, time.Minute)
	a, b := collidingPair(t, "x")
	ca, cb := spanContext(t, 1, trace.FlagsSampled), spanContext(t, 2, trace.FlagsSampled)
	r.Call("a", a, ca)
	r.Call("b", b, cb)
	// The second one first.
	if o, _, _ := runBash(t, bashEnv(r), b); o != traceparent(cb)+"\n" {
		t.Errorf("b got %q, want %s", o, traceparent(cb))
	}
	if o, _, _ := runBash(t, bashEnv(r), a); o != traceparent(ca)+"\n" {
		t.Errorf("a got %q, want %s", o, traceparent(ca))
	}

	type run struct{ cmd, want string }
	var runs []run
	for i := range 20 {
		a, b := collidingPair(t, string(rune('A'+i)))
		for j, c := range []string{a, b} {
			sc := spanContext(t, byte(10+2*i+j), trace.FlagsSampled)
			r.Call("p"+itoa(2*i+j), c, sc)
			runs = append(runs, run{c, traceparent(sc) + "\n"})
		}
	}
	var wg sync.WaitGroup
	got := make([]string, len(runs))
	for i := len(runs) - 1; i >= 0; i-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, _ = runBash(t, bashEnv(r), runs[i].cmd)
		}()
	}
	wg.Wait()
	for i, ru := range runs {
		if got[i] != ru.want {
			t.Errorf("call %d got %q, want %q", i, got[i], ru.want)
		}
	}
}

// TestHookAfterAPrefixOfManyLines: a shellCommandPrefix of any length
// (here 20 lines) comes before the command; the longest entry that the
// command string ends with, after a newline, is the call's.
func TestHookAfterAPrefixOfManyLines(t *testing.T) {
	r := openRun(t, time.Minute)
	var prefix strings.Builder
	for i := range 20 {
		prefix.WriteString("export P" + itoa(i) + "=1\n")
	}
	const cmd = "echo x\nprintenv TRACEPARENT"
	sc, short := spanContext(t, 1, trace.FlagsSampled), spanContext(t, 2, trace.FlagsSampled)
	r.Call("whole", cmd, sc)
	r.Call("tail", "printenv TRACEPARENT", short) // a suffix too, but shorter
	if o, _, _ := runBash(t, bashEnv(r), prefix.String()+cmd); o != "x\n"+traceparent(sc)+"\n" {
		t.Errorf("got %q, want %s", o, traceparent(sc))
	}
}

// TestHookAsks: a bash that finds no entry asks pi-otel, which answers
// once it has read what Pi wrote before (Sync); the hook then finds the
// entry published meanwhile. With nothing published (a ! command, an
// extension's bash), it goes on at once with what it inherited, and no
// miss is counted: the wait of a minute would end the test otherwise.
func TestHookAsks(t *testing.T) {
	r := openRun(t, time.Minute)
	const cmd = "printenv TRACEPARENT"
	sc := spanContext(t, 3, trace.FlagsSampled)
	var mu sync.Mutex
	publish := true
	var asked []Question
	r.SetSync(func(_ context.Context, q Question) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, q)
		if publish {
			r.Call("late", cmd, sc)
		}
	})
	env := bashEnv(r, "PI_SESSION_ID=sess-1", "PI_SESSION_FILE=/some/where.jsonl")
	if o, _, _ := runBash(t, env, cmd); o != traceparent(sc)+"\n" {
		t.Errorf("got %q, want %s", o, traceparent(sc))
	}
	mu.Lock()
	publish = false
	mu.Unlock()
	for range 3 {
		if o, e, c := runBash(t, env, cmd); o != runLevel+"\n" || e != "" || c != 0 {
			t.Errorf("a command of no call: got %q %q %d, want the inherited context at once", o, e, c)
		}
	}
	if m := r.Close(); m.Total() != 0 {
		t.Errorf("misses %+v, want none", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 4 || asked[0].Session != "sess-1" || asked[0].File != "/some/where.jsonl" || asked[0].PID <= 0 {
		t.Errorf("questions %+v", asked)
	}
}

// TestHookWaitsForTheReader: pi-otel starts reading Pi's output after
// Pi has started, and Pi's first bash may ask before then: its question
// waits until pi-otel reads (SetSync), and it finds the call that reading
// publishes.
func TestHookWaitsForTheReader(t *testing.T) {
	r, err := Open(Options{Base: filepath.Join(t.TempDir(), "pi-otel"), Wait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	asked := make(chan struct{})
	tell := func(Question) { close(asked) }
	r.ask.asked.Store(&tell)
	const cmd = "printenv TRACEPARENT"
	done := make(chan string)
	go func() { o, _, _ := runBash(t, bashEnv(r), cmd); done <- o }()
	<-asked
	sc := spanContext(t, 4, trace.FlagsSampled)
	r.SetSync(func(context.Context, Question) { r.Call("first", cmd, sc) })
	if o := <-done; o != traceparent(sc)+"\n" {
		t.Errorf("got %q, want %s", o, traceparent(sc))
	}
}

// TestHookBoundedWait: a pi-otel that does not answer holds a bash at
// most the wait, and the call is counted; one that has exited holds it
// not at all.
func TestHookBoundedWait(t *testing.T) {
	r := openRun(t, 50*time.Millisecond)
	release := make(chan struct{})
	r.SetSync(func(context.Context, Question) { <-release })
	if o, e, _ := runBash(t, bashEnv(r), "printenv TRACEPARENT"); o != runLevel+"\n" || e != "" {
		t.Errorf("got %q %q, want the run's context", o, e)
	}
	close(release)
	if m := r.Close(); m.Timeout != 1 {
		t.Errorf("misses %+v, want one timeout", m)
	}

	r = openRun(t, time.Hour)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	r.SetSync(func(ctx context.Context, _ Question) { <-ctx.Done() })
	env := append(bashEnv(r), "PI_OTEL_PID="+itoa(dead.Process.Pid))
	if o, _, _ := runBash(t, env, "printenv TRACEPARENT"); o != runLevel+"\n" {
		t.Errorf("pi-otel gone: got %q, want the run's context at once", o)
	}
}

// TestHookFilesArePrivate: the claims the hook creates are 0600 whatever
// the umask, which the command still sees as it was.
func TestHookFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	r := openRun(t, time.Minute)
	r.Call("a", "umask", spanContext(t, 1, trace.FlagsSampled))
	if o, _, _ := runBash(t, bashEnv(r), "umask"); o != "0022\n" {
		t.Errorf("the command's umask is %q, want 0022", o)
	}
	m, _ := filepath.Glob(filepath.Join(r.Dir(), "k.*"))
	if len(m) != 1 {
		t.Fatalf("claims %v", m)
	}
	for _, name := range append(m, filepath.Join(r.Dir(), "index"), filepath.Join(r.Dir(), "ask")) {
		fi, err := os.Lstat(name)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", name, fi.Mode(), err)
		}
	}
	if _, err := os.Lstat(filepath.Join(r.Dir(), "misses")); err == nil {
		t.Error("a misses file: counts go through the fifo")
	}
}

// TestHookIsInvisible: with or without the hook, and whether or not the
// command finds its entry, the command sees the same shell: the user's
// BASH_ENV read as bash reads it (expanded, not looked up in PATH,
// skipped when missing, its status in $?), the same $_ and $-, no
// variable or function of the hook's, and nothing more on stderr under
// exported SHELLOPTS and BASHOPTS.
func TestHookIsInvisible(t *testing.T) {
	r := openRun(t, time.Minute)
	home := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(home, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("rc", "export FROM_RC=yes\nfalse\n")
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "inpath"), []byte("export FROM_PATH=yes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const show = `echo "st=$? _=$_ -=$- rc=${FROM_RC-} path=${FROM_PATH-}"; compgen -A function; echo "[${!__pi_otel@}]"; shopt -p failglob nullglob nocasematch; echo *`
	cwd := t.TempDir() // no rc here: a name without a slash is not found
	for _, userEnv := range []string{"", "$HOME/rc", "~/rc", "${HOME}/r$((0))c", "inpath", filepath.Join(home, "missing"), filepath.Join(home, "rc")} {
		for _, opts := range [][]string{nil, {"SHELLOPTS=xtrace"}, {"SHELLOPTS=errexit:nounset:pipefail"}, {"BASHOPTS=failglob:nullglob:nocasematch:dotglob:nocaseglob"}} {
			if userEnv != "" && len(opts) > 0 && opts[0] == "SHELLOPTS=xtrace" {
				continue // the user's BASH_ENV is read untraced (docs)
			}
			for _, found := range []bool{true, false} {
				cmd := show + " # " + userEnv + strings.Join(opts, " ")
				if found {
					r.Call("c", cmd, spanContext(t, 1, trace.FlagsSampled))
				}
				plain := append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + home, "TRACEPARENT=" + runLevel, "BASH_ENV=" + userEnv}, opts...)
				o1, e1, c1 := runBashIn(t, cwd, plain, cmd)
				o2, e2, c2 := runBashIn(t, cwd, append(bashEnv(r, "HOME="+home, "PATH="+bin+":"+os.Getenv("PATH"), "BASH_ENV="+userEnv), opts...), cmd)
				if o1 != o2 || e1 != e2 || c1 != c2 {
					t.Errorf("BASH_ENV=%q %v, entry %v:\nwithout the hook %q %q %d\nwith it          %q %q %d", userEnv, opts, found, o1, e1, c1, o2, e2, c2)
				}
				r.Done("c")
			}
		}
	}
}

func runBashIn(t *testing.T, dir string, env []string, command string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir, cmd.Env = dir, env
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}
