package toolctx

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// TestKeyMatchesTheHook checks that the hook finds entries keyed in Go for
// commands of every shape: short, long, multi-byte, in a UTF-8 locale,
// and after a shellCommandPrefix.
func TestKeyMatchesTheHook(t *testing.T) {
	r := openRun(t, time.Second)
	rnd := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("abc xyz'\"$\\\n\té€😀")
	var cmds []string
	for _, n := range []int{1, 5, 63, 64, 65, 300, 70000} {
		var b strings.Builder
		for b.Len() < n {
			b.WriteRune(alphabet[rnd.IntN(len(alphabet))])
		}
		// A comment after a newline: bash runs printenv, then ignores it.
		cmds = append(cmds, "printenv TRACEPARENT\n#"+strings.ReplaceAll(b.String(), "\n", "\n#"))
	}
	for i, cmd := range cmds {
		sc := spanContext(t, byte(i+1), trace.FlagsSampled)
		for j, prefix := range []string{"", "export A=1\nshopt -s expand_aliases\n"} {
			// An entry serves one bash call: each run is a call of its own.
			id := "k" + itoa(i) + "-" + itoa(j)
			r.Call(id, cmd, sc)
			out, errOut, _ := runBash(t, bashEnv(r, "LANG=C.UTF-8"), prefix+cmd)
			if out != traceparent(sc)+"\n" || errOut != "" {
				t.Errorf("command %d (%d bytes), prefix %q: got %q %q, want %s", i, len(cmd), prefix, out, errOut, traceparent(sc))
			}
			r.Done(id)
		}
	}
}

func TestOpenRefusesADirectoryOthersCanUse(t *testing.T) {
	base := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Base: base}); err == nil {
		t.Fatal("a 0755 directory was accepted")
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Base: link}); err == nil {
		t.Fatal("a symlink was accepted")
	}
}

func TestEntriesArePrivateAndGoAway(t *testing.T) {
	r := openRun(t, time.Second)
	r.Call("a", "true", spanContext(t, 1, trace.FlagsSampled))
	m, _ := filepath.Glob(filepath.Join(r.Dir(), "c.*"))
	if len(m) != 1 {
		t.Fatalf("entries %v", m)
	}
	fi, err := os.Stat(m[0])
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("entry mode %v, %v", fi.Mode(), err)
	}
	r.Done("a")
	if _, err := os.Stat(m[0]); !os.IsNotExist(err) {
		t.Errorf("entry left after Done: %v", err)
	}
	r.Close()
	if _, err := os.Stat(r.Dir()); !os.IsNotExist(err) {
		t.Errorf("run directory left after Close: %v", err)
	}
}

// TestOpenLeavesOthersAlone: a run's directory goes when its lock is
// free (its pi-otel is gone), and stays while another process holds it,
// whatever its pid says: one in another PID namespace, say, where the pid
// names no process of ours.
func TestOpenLeavesOthersAlone(t *testing.T) {
	base := filepath.Join(t.TempDir(), "pi-otel")
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(base, "run-"+itoa(dead.Process.Pid)+"-1")
	live := filepath.Join(base, "run-"+itoa(dead.Process.Pid)+"-2")
	for _, d := range []string{gone, live} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "lock"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Held through a file description of its own, as another process's.
	held, err := openLock(filepath.Join(live, "lock"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	r, err := Open(Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("a dead run's directory is left: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live run's directory was removed: %v", err)
	}
	// And this run's own lock is held: a later pi-otel leaves it.
	r2, err := Open(Options{Base: base})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if _, err := os.Stat(r.Dir()); err != nil {
		t.Errorf("a second run removed the first's directory: %v", err)
	}
}
