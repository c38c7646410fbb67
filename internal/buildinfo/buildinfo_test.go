package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

func TestFromBuild(t *testing.T) {
	vcs := func(rev, modified, at string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: at}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name                 string
		bi                   *debug.BuildInfo
		version, commit, day string
		want                 Info
	}{
		{"no build info", nil, "", "", "", Info{Version: Dev}},
		{"-buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "", "", "",
			Info{Version: Dev, GoVersion: "go1.26.8"}},
		{"a clone with vcs stamping",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261205101500-0123456789ab+dirty"},
				Settings: vcs(rev, "true", "2026-12-05T10:15:00Z")}, "", "", "",
			Info{Version: "v0.0.0-20261205101500-0123456789ab+dirty", Commit: rev, Modified: true,
				Date: time.Date(2026, 12, 5, 10, 15, 0, 0, time.UTC), GoVersion: "go1.26.8"}},
		{"go install of a tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "", "", "",
			Info{Version: "v1.2.3"}},
		{"a release stamp wins",
			&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("feed", "true", "2020-01-01T00:00:00Z")},
			"v1.2.3", rev, "2026-12-05T10:15:00Z",
			Info{Version: "v1.2.3", Commit: rev, Date: time.Date(2026, 12, 5, 10, 15, 0, 0, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuild(tt.bi, tt.version, tt.commit, tt.day)
			if tt.want.GoVersion == "" {
				tt.want.GoVersion = got.GoVersion // the runtime's
			}
			tt.want.Platform = got.Platform
			if !got.Date.Equal(tt.want.Date) {
				t.Errorf("date %v, want %v", got.Date, tt.want.Date)
			}
			got.Date, tt.want.Date = time.Time{}, time.Time{}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Commit: "abc", Date: time.Date(2026, 12, 5, 10, 15, 0, 0, time.UTC),
		GoVersion: "go1.26.8", Platform: "linux/arm64"}
	want := "pi-otel v1.2.3\ncommit:    abc\nbuilt:     2026-12-05T10:15:00Z\ngo:        go1.26.8 linux/arm64\n" +
		"tested with Pi " + strings.Join(TestedPi, ", ") + "\n"
	if got := i.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := (Info{Version: Dev}).String(); !strings.Contains(got, "commit:    unknown") || !strings.Contains(got, "built:     unknown") {
		t.Errorf("a build without vcs information:\n%s", got)
	}
	if v := (Info{Version: Dev}).ServiceVersion(); v != "" {
		t.Errorf("service.version of a dev build %q, want none", v)
	}
}

// TestTestedPiAgree: the Pi releases --version names are the ones
// scripts/deps.sh installs for the tests and the ones the README names.
func TestTestedPiAgree(t *testing.T) {
	deps := string(repo.Read(t, "scripts/deps.sh"))
	var pinned []string
	for _, v := range []string{"PI_VERSION", "PI_103_VERSION", "PI_073_VERSION"} {
		m := regexp.MustCompile(`(?m)^` + v + `=(\S+)$`).FindStringSubmatch(deps)
		if m == nil {
			t.Fatalf("scripts/deps.sh has no %s=", v)
		}
		pinned = append(pinned, m[1])
	}
	if !slices.Equal(pinned, TestedPi) {
		t.Errorf("scripts/deps.sh installs Pi %v, buildinfo.TestedPi says %v", pinned, TestedPi)
	}
	// Every list of Pi versions in the README is this one.
	readme := string(repo.Read(t, "README.md"))
	lists := regexp.MustCompile(`Pi ((?:\d+\.\d+\.\d+, )*\d+\.\d+\.\d+,? and \d+\.\d+\.\d+)`).FindAllStringSubmatch(readme, -1)
	if len(lists) == 0 {
		t.Fatal("the README names no Pi versions it is tested with")
	}
	want := strings.Join(TestedPi[:len(TestedPi)-1], ", ") + " and " + TestedPi[len(TestedPi)-1]
	for _, l := range lists {
		if l[1] != want {
			t.Errorf("the README says Pi %s; buildinfo.TestedPi is %s", l[1], want)
		}
	}
}

// TestBinaryVersion builds pi-otel as a release does (the linker's stamps)
// and as a clone does with VCS stamping, and reads --version back.
func TestBinaryVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pi-otel twice")
	}
	dir := t.TempDir()
	build := func(name string, goflags string, args ...string) string {
		bin := filepath.Join(dir, name)
		cmd := exec.Command("go", append(append([]string{"build", "-o", bin}, args...), "./cmd/pi-otel")...)
		cmd.Dir = repo.Root()
		cmd.Env = append(os.Environ(), "GOFLAGS="+goflags)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		return bin
	}
	version := func(bin string, arg string) string {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("%s %s: %v", bin, arg, err)
		}
		return string(out)
	}

	const pkg = "github.com/pi-otel/pi-otel/internal/buildinfo"
	stamped := build("stamped", "-trimpath -buildvcs=false", "-ldflags",
		"-X "+pkg+".version=v1.2.3 -X "+pkg+".commit=0123abc -X "+pkg+".date=2026-12-05T10:15:00Z")
	out := version(stamped, "--version")
	for _, want := range []string{"pi-otel v1.2.3\n", "commit:    0123abc\n", "built:     2026-12-05T10:15:00Z\n",
		"tested with Pi " + strings.Join(TestedPi, ", ") + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stamped --version lacks %q:\n%s", want, out)
		}
	}
	if other := version(stamped, "version"); other != out {
		t.Errorf("version and --version differ:\n%s\n%s", other, out)
	}

	// The go command finds a repository by a .git directory: a clone, not
	// a linked worktree (whose .git is a file) nor an unpacked archive.
	if fi, err := os.Stat(filepath.Join(repo.Root(), ".git")); err != nil || !fi.IsDir() {
		t.Skip("not in a git clone: the go command records no VCS information here")
	}
	head, err := exec.Command("git", "-C", repo.Root(), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	out = version(build("clone", "-trimpath -buildvcs=true"), "--version")
	first, _, _ := strings.Cut(out, "\n")
	// A pseudo-version (no tag yet) or a tag, +dirty in a changed tree.
	if !regexp.MustCompile(`^pi-otel v\d+\.\d+\.\d+([-+]\S+)?$`).MatchString(first) {
		t.Errorf("a clone build's first line %q: want the module's pseudo-version", first)
	}
	if !strings.Contains(out, "commit:    "+strings.TrimSpace(string(head))) {
		t.Errorf("a clone build does not name HEAD %s:\n%s", head, out)
	}
}
