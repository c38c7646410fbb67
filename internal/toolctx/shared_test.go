//go:build linux

package toolctx

import (
	"bytes"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// localUser adds a local user for the test, and removes it after.
func localUser(t *testing.T, name string) (uid, gid int) {
	t.Helper()
	if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/bin/bash", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("userdel", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// TestAnotherUsersDirectory: another local user creates the victim's
// default base directory first ($TMPDIR/pi-otel-UID, XDG_RUNTIME_DIR
// unset), with a planted entry for the victim's next command, watch.pid,
// and links named misses and ask to a file of the victim's. The victim's
// bash under the setup line of docs/watch.md gets no planted context,
// and the victim's file is unchanged. It needs root, to add the two
// users; CI runs it as root.
func TestAnotherUsersDirectory(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("this test adds two local users (useradd) and must run as root, as CI does")
		}
		t.Skip("needs root to add two local users (useradd); CI runs it as root")
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Fatalf("this test needs useradd: %v", err)
	}
	tag := strconv.Itoa(os.Getpid() % 100000)
	aUID, aGID := localUser(t, "piotel-a"+tag)
	vUID, vGID := localUser(t, "piotel-v"+tag)

	// A shared temporary directory, as /tmp is: sticky, open to all.
	tmp, err := os.MkdirTemp("", "shared-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(tmp, "victim")
	mkdirOwned(t, victim, 0o700, vUID, vGID)
	hookPath := filepath.Join(victim, HookName)
	writeOwned(t, hookPath, hook, 0o600, vUID, vGID)
	rc := filepath.Join(victim, "bashrc")
	writeOwned(t, rc, []byte("original\n"), 0o600, vUID, vGID)
	session := filepath.Join(victim, "s.jsonl")
	writeOwned(t, session, []byte("{}\n"), 0o600, vUID, vGID)

	// The attacker's directory, where the victim's hook looks.
	const sid = "0198a2b4-3333-7000-8000-000000000003"
	const planted = "00-99999999999999999999999999999999-9999999999999999-01"
	const cmd = "printenv TRACEPARENT"
	base := filepath.Join(tmp, "pi-otel-"+strconv.Itoa(vUID))
	mkdirOwned(t, base, 0o777, aUID, aGID)
	mkdirOwned(t, filepath.Join(base, "s-"+sid), 0o777, aUID, aGID)
	files := map[string]string{
		"watch.pid": strconv.Itoa(os.Getpid()) + "\n",
		// This hook's entry and index, and the older hook's name.
		"s-" + sid + "/index": strconv.Itoa(len(cmd)) + " 1\n",
		"s-" + sid + "/c.1":   planted + "\n\n" + cmd,
		"s-" + sid + "/c." + strconv.Itoa(len(cmd)) + "-0.00000001": planted + "\n\n",
	}
	for name, body := range files {
		writeOwned(t, filepath.Join(base, name), []byte(body), 0o666, aUID, aGID)
	}
	for _, name := range []string{"misses", "ask", "s-" + sid + "/misses", "a.1"} {
		if err := os.Symlink(rc, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(filepath.Join(base, name), aUID, aGID); err != nil {
			t.Fatal(err)
		}
	}

	prefix := ". " + hookPath + " 2>/dev/null || :\n"
	for _, c := range []string{cmd, "printenv TRACEPARENT # no entry"} {
		sh := exec.Command("bash", "-c", prefix+c)
		sh.Dir = victim
		sh.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + victim, "TMPDIR=" + tmp, "TRACEPARENT=" + runLevel,
			"PI_SESSION_ID=" + sid, "PI_SESSION_FILE=" + session, "PI_OTEL_HOOK_WAIT_MS=50"}
		sh.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(vUID), Gid: uint32(vGID)}}
		var o, e bytes.Buffer
		sh.Stdout, sh.Stderr = &o, &e
		if err := sh.Run(); err != nil {
			t.Fatalf("%v: %s", err, e.Bytes())
		}
		if o.String() != runLevel+"\n" || e.Len() != 0 {
			t.Errorf("%q: the victim's bash got %q %q, want its own %s", c, o.String(), e.String(), runLevel)
		}
	}
	if b, err := os.ReadFile(rc); err != nil || string(b) != "original\n" {
		t.Errorf("the victim's file is now %q, %v", b, err)
	}
}

func mkdirOwned(t *testing.T, dir string, mode os.FileMode, uid, gid int) {
	t.Helper()
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func writeOwned(t *testing.T, path string, body []byte, mode os.FileMode, uid, gid int) {
	t.Helper()
	if err := os.WriteFile(path, body, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}
