package vcs_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/vcs"
)

// repo makes a git repository with one commit and the given origin.
func repo(t *testing.T, origin string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("this test needs git on PATH: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "widget")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	run("init", "-q", "-b", "feature/x")
	if origin != "" {
		run("remote", "add", "origin", origin)
	}
	run("commit", "-q", "--allow-empty", "-m", "one")
	return dir
}

func head(t *testing.T, dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func TestReadTokenNeverAppears(t *testing.T) {
	const token = "ghp_s3cr3tT0k3nValue"
	dir := repo(t, "https://alice:"+token+"@git.example.com/acme/widget.git?access_token="+token)
	info, err := vcs.Read(context.Background(), filepath.Join(dir, "sub"))
	if err != nil {
		t.Fatal(err)
	}
	want := vcs.Info{URL: "https://git.example.com/acme/widget.git", Name: "widget", Branch: "feature/x", Revision: head(t, dir)}
	if info != want {
		t.Errorf("Read = %+v, want %+v", info, want)
	}
	for _, kv := range info.Attributes() {
		if strings.Contains(kv.Value.String(), token) || strings.Contains(kv.Value.String(), "alice") {
			t.Errorf("%s carries the credentials: %s", kv.Key, kv.Value.String())
		}
	}
	keys := map[string]string{}
	for _, kv := range info.Attributes() {
		keys[string(kv.Key)] = kv.Value.String()
	}
	for _, k := range []string{"vcs.repository.url.full", "vcs.repository.name", "vcs.ref.head.name", "vcs.ref.head.revision"} {
		if keys[k] == "" {
			t.Errorf("no %s in %v", k, keys)
		}
	}
}

// A remote URL that does not parse, or has no path, names no repository:
// not its host, nor its port; the folder does, as with no remote.
func TestReadRemoteWithoutAName(t *testing.T) {
	for origin, url := range map[string]string{
		"https://us%zzer:tok@git.example.com:8443/acme/widget-x.git": "https://git.example.com:8443",
		"https://git.example.com:8443/":                              "https://git.example.com:8443/",
		"https://git.example.com":                                    "https://git.example.com",
	} {
		dir := repo(t, origin)
		info, err := vcs.Read(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if info.URL != url || info.Name != "widget" {
			t.Errorf("%s: URL %q, name %q; want %q, the folder's name widget", origin, info.URL, info.Name, url)
		}
	}
}

func TestReadDetachedHead(t *testing.T) {
	dir := repo(t, "")
	rev := head(t, dir)
	if out, err := exec.Command("git", "-C", dir, "checkout", "-q", "--detach").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	info, err := vcs.Read(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	// No remote: the folder names the repository; detached: no branch.
	if want := (vcs.Info{Name: "widget", Revision: rev}); info != want {
		t.Errorf("Read = %+v, want %+v", info, want)
	}
	for _, kv := range info.Attributes() {
		if kv.Key == "vcs.ref.head.name" || kv.Key == "vcs.ref.head.type" {
			t.Errorf("a detached HEAD has %s", kv.Key)
		}
	}
}

func TestReadOutsideRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("this test needs git on PATH: %v", err)
	}
	dir := t.TempDir()
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(dir))
	info, err := vcs.Read(context.Background(), dir)
	if !errors.Is(err, vcs.ErrNotRepository) || info != (vcs.Info{}) {
		t.Errorf("Read = %+v, %v; want nothing, ErrNotRepository", info, err)
	}
	if attrs := vcs.Start(context.Background(), dir).Attributes(); len(attrs) != 0 {
		t.Errorf("Start found %v", attrs)
	}
}

func TestReadMissingGit(t *testing.T) {
	info, err := vcs.Read(context.Background(), t.TempDir(), vcs.WithGit(filepath.Join(t.TempDir(), "no-git")))
	if err == nil || info != (vcs.Info{}) {
		t.Errorf("Read = %+v, %v; want nothing and an error", info, err)
	}
}

// TestReadSlowIsBounded: a git that hangs (a file system that does not
// answer), and leaves a child holding its output, is given up on at the
// timeout; were it not, this test would wait for the child's hour.
func TestReadSlowIsBounded(t *testing.T) {
	slow := filepath.Join(t.TempDir(), "git")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nsleep 3600 &\nsleep 3600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := vcs.Read(context.Background(), t.TempDir(), vcs.WithGit(slow), vcs.WithTimeout(50*time.Millisecond))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Read of a hung git: %v, want the deadline", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Read of a hung git did not return")
	}
}

func TestCleanURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://x-access-token:tok@github.com/o/r.git": "https://github.com/o/r.git",
		"https://tok@github.com/o/r":                    "https://github.com/o/r",
		"https://github.com/o/r?private_token=tok#frag": "https://github.com/o/r",
		"ssh://git@host:22/o/r.git":                     "ssh://host:22/o/r.git",
		"git@github.com:o/r.git":                        "ssh://github.com/o/r.git",
		"user:tok@host:o/r":                             "ssh://host/o/r",
		"/srv/git/r.git":                                "/srv/git/r.git",
		"https://us%zzer:tok@host/r":                    "https://host",
		"":                                              "",
	} {
		if got := vcs.CleanURL(raw); got != want {
			t.Errorf("CleanURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestReadRepositoryWithoutCommits: a fresh repository names itself and
// its branch-to-be's remote, with no revision.
func TestReadRepositoryWithoutCommits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("this test needs git on PATH: %v", err)
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"remote", "add", "origin", "git@git.example.com:acme/widget.git"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	info, err := vcs.Read(context.Background(), dir)
	if err != nil || info.Name != "widget" || info.URL != "ssh://git.example.com/acme/widget.git" || info.Revision != "" {
		t.Errorf("Read = %+v, %v", info, err)
	}
}

// BenchmarkRead: what a live run's read of its work tree costs (two git
// processes), here on this repository.
func BenchmarkRead(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("no git")
	}
	for b.Loop() {
		if _, err := vcs.Read(context.Background(), "."); err != nil {
			b.Fatal(err)
		}
	}
}
