package sessionwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeProc builds a /proc with the processes given: pid → ppid, argv, cwd
// and open files.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) *fakeProc { return &fakeProc{t: t, root: t.TempDir()} }

func (p *fakeProc) add(pid, ppid int, argv []string, cwd string, open ...string) {
	d := filepath.Join(p.root, fmt.Sprint(pid))
	must(p.t, os.MkdirAll(filepath.Join(d, "fd"), 0o755))
	must(p.t, os.WriteFile(filepath.Join(d, "stat"), fmt.Appendf(nil, "%d (node (x)) S %d 1 1", pid, ppid), 0o644))
	must(p.t, os.WriteFile(filepath.Join(d, "cmdline"), []byte(strings.Join(argv, "\x00")+"\x00"), 0o644))
	must(p.t, os.Symlink(cwd, filepath.Join(d, "cwd")))
	for i, f := range open {
		must(p.t, os.Symlink(f, filepath.Join(d, "fd", fmt.Sprint(10+i))))
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sessionFile(t *testing.T, dir, name, header string) string {
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, []byte(header+"\n"), 0o644))
	return p
}

func TestOwnerRules(t *testing.T) {
	dir := t.TempDir()
	pinned := sessionFile(t, dir, "a.jsonl", `{"type":"session","id":"0001-pinned"}`)
	fork := sessionFile(t, dir, "b.jsonl", `{"type":"session","id":"0002","parentSession":"`+pinned+`"}`)
	other := sessionFile(t, dir, "c.jsonl", `{"type":"session","id":"0003"}`)
	held := sessionFile(t, dir, "d.jsonl", `{"type":"session","id":"0004"}`)
	partial := filepath.Join(dir, "e.jsonl")
	must(t, os.WriteFile(partial, []byte(`{"type":"sess`), 0o644))

	proc := newFakeProc(t)
	proc.add(100, 1, []string{"node", "/x/node_modules/.bin/pi"}, "/work") // this Pi
	proc.add(101, 100, []string{"bash", "-c", "make"}, "/work", held)      // its bash tool, holding d
	proc.add(200, 1, []string{"/usr/bin/pi", "--continue"}, "/work")       // another Pi, same folder
	proc.add(300, 1, []string{"/usr/bin/pi"}, "/elsewhere")                // another Pi, elsewhere
	proc.add(400, 1, []string{"vim", "pi"}, "/work")                       // not Pi
	o := &Owner{PID: 100, Dir: dir, Cwd: "/work", IDs: []string{"0001"}, Proc: proc.root}

	for _, c := range []struct {
		path        string
		ok, decided bool
	}{
		{partial, false, false}, // no whole header yet: ask again
		{pinned, true, true},    // rule 1, by id prefix
		{fork, true, true},      // rule 2
		{held, true, true},      // rule 3
		{other, false, true},    // rule 4: pid 200 could have written it
	} {
		ok, decided := o.Accept(c.path)
		if ok != c.ok || decided != c.decided {
			t.Errorf("Accept(%s) = %v, %v; want %v, %v", filepath.Base(c.path), ok, decided, c.ok, c.decided)
		}
	}
	if got := o.Ambiguous(); len(got) != 1 || got[0] != other {
		t.Errorf("Ambiguous = %v", got)
	}

	// Alone in its folder (the other Pi elsewhere), any new file is this Pi's.
	alone := newFakeProc(t)
	alone.add(100, 1, []string{"pi"}, "/work")
	alone.add(300, 1, []string{"pi"}, "/elsewhere")
	o = &Owner{PID: 100, Dir: dir, Cwd: "/work", Proc: alone.root}
	if ok, _ := o.Accept(other); !ok {
		t.Error("a file written while no other Pi runs in the folder was not taken")
	}
	// With a custom session directory every other Pi may share it.
	o = &Owner{PID: 100, Dir: dir, Custom: true, Cwd: "/work", Proc: alone.root}
	if ok, _ := o.Accept(other); ok {
		t.Error("a custom directory shared with another Pi: the file was taken")
	}
}

func TestPiDirs(t *testing.T) {
	home := t.TempDir()
	cwd := t.TempDir()
	env := map[string]string{}
	d := PiDirs{Getenv: func(k string) string { return env[k] }, Home: home, Cwd: cwd, Project: true}
	want := func(dir string, custom bool) {
		t.Helper()
		got, c, err := d.SessionRoot()
		if err != nil || got != dir || c != custom {
			t.Errorf("SessionRoot = %q, %v, %v; want %q, %v", got, c, err, dir, custom)
		}
	}
	want(filepath.Join(home, ".pi", "agent", "sessions"), false)
	env["PI_CODING_AGENT_DIR"] = "~/agent"
	want(filepath.Join(home, "agent", "sessions"), false)
	must(t, os.MkdirAll(filepath.Join(home, "agent"), 0o755))
	must(t, os.WriteFile(filepath.Join(home, "agent", "settings.json"), []byte(`{"sessionDir":"~/s"}`), 0o644))
	want(filepath.Join(home, "s"), true)
	must(t, os.MkdirAll(filepath.Join(cwd, ".pi"), 0o755))
	must(t, os.WriteFile(filepath.Join(cwd, ".pi", "settings.json"), []byte(`{"sessionDir":"rel"}`), 0o644))
	want(filepath.Join(cwd, "rel"), true) // the project's, relative to cwd
	d.Project = false
	want(filepath.Join(home, "s"), true) // watch reads no project's settings
	env["PI_CODING_AGENT_SESSION_DIR"] = "/abs/sessions"
	want("/abs/sessions", true)

	if got := ProjectDir("/r", "/home/me/proj"); got != "/r/--home-me-proj--" {
		t.Errorf("ProjectDir = %q", got)
	}
	if got := ProjectDir("/r", `C:\Users\me`); got != "/r/--C--Users-me--" {
		t.Errorf("ProjectDir of a Windows path = %q", got)
	}
}

// Another user's Pi, whose folder cannot be read, cannot write in a
// session folder only its owner may write to: it leaves the file to this
// Pi. Root's can, and so can anyone's in a folder others may write to.
func TestOwnerOtherUsers(t *testing.T) {
	for _, c := range []struct {
		name string
		uid  int
		perm os.FileMode
		ok   bool
	}{
		{"another user", os.Getuid() + 1, 0o700, true},
		{"another user, a folder all may write to", os.Getuid() + 1, 0o777, false},
		{"root", 0, 0o700, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.Chmod(dir, c.perm))
			file := sessionFile(t, dir, "a.jsonl", `{"type":"session","id":"0001"}`)
			proc := newFakeProc(t)
			proc.add(100, 1, []string{"pi"}, "/work")
			proc.add(200, 1, []string{"/usr/bin/pi"}, "/home/other/project")
			must(t, os.Remove(filepath.Join(proc.root, "200", "cwd"))) // unreadable, as another user's is
			must(t, os.WriteFile(filepath.Join(proc.root, "200", "status"), fmt.Appendf(nil, "Name:\tnode\nUid:\t%d\t%d\t%d\t%d\n", c.uid, c.uid, c.uid, c.uid), 0o644))
			o := &Owner{PID: 100, Dir: dir, Cwd: "/work", Proc: proc.root}
			if ok, decided := o.Accept(file); ok != c.ok || !decided {
				t.Errorf("Accept = %v, %v; want %v, true", ok, decided, c.ok)
			}
		})
	}
}
