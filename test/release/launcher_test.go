//go:build release

package release

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// helperEnv makes this test binary the stand-in for pi-otel that
// TestLauncher puts into the platform package: it reports its pid and
// process group, echoes stdin, counts SIGINTs, and exits 7.
const helperEnv = "PI_OTEL_RELEASE_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		helper()
		return
	}
	os.Exit(m.Run())
}

func helper() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, os.Interrupt)
	pgid, _ := syscall.Getpgid(0)
	fmt.Printf("ready pid=%d pgid=%d args=%q\n", os.Getpid(), pgid, os.Args[1:])
	fmt.Fprintln(os.Stderr, "to stderr")
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	n := 0
	for {
		select {
		case <-sigs:
			n++
			fmt.Println("SIGINT")
		case l, ok := <-lines:
			if !ok {
				fmt.Printf("sigint=%d\n", n)
				os.Exit(7)
			}
			fmt.Println("in:" + l)
		}
	}
}

// launcher extracts the npm launcher, bin/pi-otel, from the main package.
func launcher(t testing.TB, b build) []byte {
	main, _ := npmTarballs(t, b)
	f, err := os.Open(main)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no package/bin/pi-otel in %s: %v", main, err)
		}
		if h.Name == "package/bin/pi-otel" {
			if h.Mode&0o111 == 0 {
				t.Errorf("the launcher's mode is %o: not executable", h.Mode)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func write(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
}

// TestLauncher runs the npm launcher in the layouts package managers make,
// reached through the links they make, and checks that the binary is the
// launcher's own process (exec, nothing between them): stdio and the exit
// code are the binary's, and a Ctrl-C to the terminal's process group
// reaches it once.
func TestLauncher(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the process table from /proc")
	}
	b := dist(t)
	script := launcher(t, b)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helperBin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	plat := "pi-otel-linux-" + map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]

	layouts := []struct {
		name string
		// pkg is the pi-otel package's directory, bin the platform
		// package's binary, link what the user runs: a link to
		// pkg/bin/pi-otel, relative or absolute.
		pkg, bin, link, target string
	}{
		// npm install -g pi-otel from the registry: the platform package
		// nests below pi-otel.
		{"global nested", "lib/node_modules/pi-otel", "lib/node_modules/pi-otel/node_modules/" + plat + "/bin/pi-otel",
			"bin/pi-otel", "../lib/node_modules/pi-otel/bin/pi-otel"},
		// A project's node_modules, hoisted, and pnpm's store, where the
		// dependencies sit beside the package.
		{"hoisted", "node_modules/pi-otel", "node_modules/" + plat + "/bin/pi-otel",
			"node_modules/.bin/pi-otel", "../pi-otel/bin/pi-otel"},
		{"pnpm", "node_modules/.pnpm/pi-otel@1.0.0/node_modules/pi-otel",
			"node_modules/.pnpm/pi-otel@1.0.0/node_modules/" + plat + "/bin/pi-otel",
			"node_modules/.bin/pi-otel", "../.pnpm/pi-otel@1.0.0/node_modules/pi-otel/bin/pi-otel"},
		{"absolute link", "opt/pi-otel", "opt/pi-otel/node_modules/" + plat + "/bin/pi-otel", "usr/bin/pi-otel", "ABS"},
		{"no link", "node_modules/pi-otel", "node_modules/" + plat + "/bin/pi-otel", "", ""},
		// A node_modules installed for several platforms (npm install
		// --os --cpu): the launcher asks uname which is this one's.
		{"several platforms", "node_modules/pi-otel", "node_modules/" + plat + "/bin/pi-otel",
			"node_modules/.bin/pi-otel", "../pi-otel/bin/pi-otel"},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, filepath.Join(root, l.pkg, "bin/pi-otel"), script, 0o755)
			write(t, filepath.Join(root, l.bin), helperBin, 0o755)
			if l.name == "several platforms" {
				for _, other := range []string{"pi-otel-linux-x64", "pi-otel-linux-arm64", "pi-otel-darwin-arm64"} {
					if other != plat {
						write(t, filepath.Join(root, "node_modules", other, "bin/pi-otel"), []byte("#!/bin/sh\nexit 99\n"), 0o755)
					}
				}
			}
			if l.link == "" {
				checkExec(t, filepath.Join(root, l.pkg, "bin/pi-otel"))
				return
			}
			target := l.target
			if target == "ABS" {
				target = filepath.Join(root, l.pkg, "bin/pi-otel")
			}
			link := filepath.Join(root, l.link)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			checkExec(t, link)
		})
	}

	t.Run("missing platform package", func(t *testing.T) {
		root := t.TempDir()
		write(t, filepath.Join(root, "node_modules/pi-otel/bin/pi-otel"), script, 0o755)
		cmd := exec.Command(filepath.Join(root, "node_modules/pi-otel/bin/pi-otel"), "demo")
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), plat) {
			t.Errorf("without %s: exit %d (%v), %q; want 1 and a line naming it", plat, code, err, out)
		}
	})
}

// checkExec runs the launcher at path in a process group of its own, as a
// shell runs a foreground job.
func checkExec(t *testing.T, path string) {
	cmd := exec.Command(path, "run", "--", "pi", "a b")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	stdout := bufio.NewScanner(stdoutPipe)
	next := func() string {
		if !stdout.Scan() {
			t.Fatalf("the binary's output ended early; stderr:\n%s", stderr.String())
		}
		return stdout.Text()
	}

	ready := next()
	want := fmt.Sprintf("ready pid=%d pgid=%d args=%q", cmd.Process.Pid, cmd.Process.Pid, []string{"run", "--", "pi", "a b"})
	if ready != want {
		t.Fatalf("the binary says %q, want %q: it is not the launcher's own process", ready, want)
	}
	if members := groupMembers(t, cmd.Process.Pid); len(members) != 1 {
		t.Errorf("process group %d has %v; want the binary alone", cmd.Process.Pid, members)
	}
	if _, err := io.WriteString(stdin, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "in:hello" {
		t.Errorf("stdin echoed as %q", l)
	}
	// A terminal's Ctrl-C: SIGINT to the foreground process group.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if l := next(); l != "SIGINT" {
		t.Fatalf("after SIGINT: %q", l)
	}
	stdin.Close()
	if l := next(); l != "sigint=1" {
		t.Errorf("the binary saw %q, want sigint=1", l)
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Errorf("exit %d (%v), want the binary's 7", code, err)
	}
	if stderr.String() != "to stderr\n" {
		t.Errorf("stderr %q", stderr.String())
	}
}

// groupMembers lists the live processes of process group pgid.
func groupMembers(t *testing.T, pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// BenchmarkStart: `pi-otel --version` run directly and through the npm
// launcher, in a global install's layout (a link in bin, the platform
// package beside pi-otel). The difference is what the launcher costs each
// pi-otel run -- pi.
func BenchmarkStart(b *testing.B) {
	t := b
	d := dist(t)
	root := b.TempDir()
	modules := filepath.Join(root, "lib/node_modules")
	bin := hostBinary(t, d, b.TempDir())
	data, err := os.ReadFile(bin)
	if err != nil {
		b.Fatal(err)
	}
	plat := "pi-otel-linux-" + map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	write(t, filepath.Join(modules, plat, "bin/pi-otel"), data, 0o755)
	write(t, filepath.Join(modules, "pi-otel/bin/pi-otel"), launcher(t, d), 0o755)
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		b.Fatal(err)
	}
	link := filepath.Join(root, "bin/pi-otel")
	if err := os.Symlink("../lib/node_modules/pi-otel/bin/pi-otel", link); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, path string }{{"direct", filepath.Join(modules, plat, "bin/pi-otel")}, {"launcher", link}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := exec.Command(c.path, "--version").Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
