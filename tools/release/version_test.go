package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestNextPatch(t *testing.T) {
	for tag, want := range map[string]string{
		"v0.0.0":            "0.0.1",
		"v1.2.3":            "1.2.4",
		"v1.2.9":            "1.2.10",
		"v1.2.3-rc.1":       "1.2.3", // a prerelease comes before its release
		"v1.2.3+build.7":    "1.2.4",
		"v2.0.0-beta.2+abc": "2.0.0",
	} {
		if got, err := nextPatch(tag); err != nil || got != want {
			t.Errorf("nextPatch(%s) = %q, %v; want %q", tag, got, err, want)
		}
	}
	for _, tag := range []string{"1.2.3", "v1.2", "v01.2.3", "vnext", "v1.2.3-"} {
		if got, err := nextPatch(tag); err == nil {
			t.Errorf("nextPatch(%s) = %q, want an error", tag, got)
		}
	}
}

// repo is a git repository of one commit, made at a fixed time, with the
// files run needs to take it for pi-otel's.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cmd", "pi-otel"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "init", "-q")
	gitT(t, dir, "add", ".")
	gitT(t, dir, "commit", "-q", "-m", "one")
	return dir
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05+01:00", "GIT_COMMITTER_DATE=2026-01-02T03:04:05+01:00",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestDescribeSnapshot(t *testing.T) {
	dir := repo(t)
	short := gitT(t, dir, "rev-parse", "--short", "HEAD")
	r, err := describe(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	// No tag yet: after v0.0.0.
	if r.version != "0.0.1-snapshot.g"+short || r.tag != "v0.0.0" {
		t.Errorf("version %q tag %q, want 0.0.1-snapshot.g%s after v0.0.0", r.version, r.tag, short)
	}
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(r.commit) {
		t.Errorf("commit %q", r.commit)
	}
	if want := time.Date(2026, 1, 2, 2, 4, 5, 0, time.UTC); !r.date.Equal(want) || r.date.Location() != time.UTC {
		t.Errorf("date %v, want the commit's, %v, in UTC", r.date, want)
	}

	gitT(t, dir, "tag", "v1.4.2")
	gitT(t, dir, "tag", "other") // not vX.Y.Z: not the last tag
	if r, err := describe(dir, true); err != nil || r.version != "1.4.3-snapshot.g"+short {
		t.Errorf("after v1.4.2: %v %+v", err, r)
	}
	// A changed tree builds a snapshot all the same.
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := describe(dir, true); err != nil {
		t.Errorf("a snapshot of a changed tree: %v", err)
	}
}

func TestDescribeRelease(t *testing.T) {
	dir := repo(t)
	if _, err := describe(dir, false); err == nil {
		t.Error("a release without a tag on HEAD built")
	}
	gitT(t, dir, "tag", "v1.2.3-rc.1")
	r, err := describe(dir, false)
	if err != nil || r.version != "1.2.3-rc.1" || r.tag != "v1.2.3-rc.1" {
		t.Errorf("at v1.2.3-rc.1: %v %+v", err, r)
	}
	if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := describe(dir, false); err == nil || !strings.Contains(err.Error(), "changes") {
		t.Errorf("a release of a changed tree: %v", err)
	}
}
