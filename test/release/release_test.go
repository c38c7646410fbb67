//go:build release

// Package release checks what scripts/release.sh built, as a user gets it:
// the archives and their checksums, the binaries of every platform, the npm
// packages installed from their files alone, the .deb and the .rpm.
// PI_OTEL_DIST names the dist/ directory of a build (scripts/test.sh builds
// a snapshot and sets it); the build tag keeps `go test ./...` from needing
// one.
package release

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

var platforms = []struct{ goos, goarch, npmCPU string }{
	{"linux", "amd64", "x64"}, {"linux", "arm64", "arm64"}, {"darwin", "amd64", "x64"}, {"darwin", "arm64", "arm64"},
}

// build is one dist/ directory and what its metadata says.
type build struct {
	dir     string
	version string // without the v, as in file names and npm
	commit  string
}

func dist(t testing.TB) build {
	t.Helper()
	dir := os.Getenv("PI_OTEL_DIST")
	if dir == "" {
		t.Fatal("PI_OTEL_DIST is not set: run scripts/release.sh --snapshot and set it to dist/ (scripts/test.sh does)")
	}
	var meta struct{ Version, Commit string }
	b, err := os.ReadFile(filepath.Join(dir, "metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.Version == "" {
		t.Fatalf("dist/metadata.json: %v %+v", err, meta)
	}
	// A build that could not read the repository names no commit.
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(meta.Commit) {
		t.Fatalf("dist/metadata.json names commit %q: built without the repository's state", meta.Commit)
	}
	return build{dir: dir, version: meta.Version, commit: meta.Commit}
}

// commitDate is the commit's time as git has it, or zero when this clone
// lacks the commit.
func (b build) commitDate(t testing.TB) time.Time {
	out, err := exec.Command("git", "-C", repo.Root(), "log", "-1", "--format=%cI", b.commit).Output()
	if err != nil {
		return time.Time{}
	}
	d, err := time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (b build) archive(goos, goarch string) string {
	return filepath.Join(b.dir, "pi-otel_"+b.version+"_"+goos+"_"+goarch+".tar.gz")
}

// untar returns the regular files of a .tar.gz by name.
func untar(t testing.TB, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

// TestChecksums: the four archives, the packages and the checksums file
// exist, and every file it lists has its SHA-256 (what sha256sum -c does).
func TestChecksums(t *testing.T) {
	b := dist(t)
	f, err := os.Open(filepath.Join(b.dir, "pi-otel_"+b.version+"_checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("checksums line %q", sc.Text())
		}
		data, err := os.ReadFile(filepath.Join(b.dir, name))
		if err != nil {
			t.Errorf("listed %s: %v", name, err)
			continue
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: sha256 %x, the checksums file says %s", name, got, sum)
		}
		listed[name] = true
	}
	var want []string
	for _, p := range platforms {
		want = append(want, filepath.Base(b.archive(p.goos, p.goarch)))
	}
	for _, ext := range []string{".deb", ".rpm"} {
		pkgs, _ := filepath.Glob(filepath.Join(b.dir, "*"+ext))
		if len(pkgs) != 2 {
			t.Errorf("%d %s packages, want 2 (amd64, arm64)", len(pkgs), ext)
		}
		for _, p := range pkgs {
			want = append(want, filepath.Base(p))
		}
	}
	for _, name := range want {
		if !listed[name] {
			t.Errorf("%s is not in the checksums file", name)
		}
	}
}

// TestBinaries: each archive holds a binary of its platform, with the
// licence, the docs and the unit beside it.
func TestBinaries(t *testing.T) {
	b := dist(t)
	for _, p := range platforms {
		t.Run(p.goos+"_"+p.goarch, func(t *testing.T) {
			dir := "pi-otel_" + b.version + "_" + p.goos + "_" + p.goarch + "/"
			files := untar(t, b.archive(p.goos, p.goarch))
			for _, name := range []string{"pi-otel", "LICENSE", "README.md", "CHANGELOG.md", "pi-otel-watch.service"} {
				if _, ok := files[dir+name]; !ok {
					t.Errorf("the archive lacks %s%s", dir, name)
				}
			}
			bin := bytes.NewReader(files[dir+"pi-otel"])
			switch p.goos {
			case "darwin":
				f, err := macho.NewFile(bin)
				if err != nil {
					t.Fatalf("not Mach-O: %v", err)
				}
				want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[p.goarch]
				if f.Cpu != want || f.Type != macho.TypeExec {
					t.Errorf("Mach-O %v %v, want %v executable", f.Cpu, f.Type, want)
				}
			case "linux":
				f, err := elf.NewFile(bin)
				if err != nil {
					t.Fatalf("not ELF: %v", err)
				}
				want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.goarch]
				if f.Machine != want || f.Type != elf.ET_EXEC {
					t.Errorf("ELF %v %v, want a static %v executable", f.Machine, f.Type, want)
				}
				for _, prog := range f.Progs {
					if prog.Type == elf.PT_INTERP {
						t.Error("dynamically linked: it would need a libc of the right kind")
					}
				}
			}
		})
	}
}

// hostBinary writes this machine's binary from its archive into dir.
func hostBinary(t testing.TB, b build, dir string) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("runs the linux binaries; this is %s", runtime.GOOS)
	}
	name := "pi-otel_" + b.version + "_linux_" + runtime.GOARCH + "/pi-otel"
	data, ok := untar(t, b.archive("linux", runtime.GOARCH))[name]
	if !ok {
		t.Fatalf("no %s", name)
	}
	bin := filepath.Join(dir, "pi-otel")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// bareEnv is a user's environment without Go: PATH has only the system's
// directories (and extra, first), HOME is empty, no OTEL_ setting.
func bareEnv(t *testing.T, extra ...string) []string {
	path := strings.Join(append(extra, "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"), ":")
	for _, d := range filepath.SplitList(path) {
		if _, err := os.Stat(filepath.Join(d, "go")); err == nil {
			t.Fatalf("go is in %s, on the bare PATH", d)
		}
	}
	return []string{"PATH=" + path, "HOME=" + t.TempDir(), "LANG=C.UTF-8"}
}

// checkRuns runs --version and demo with env and checks what they print.
func checkRuns(t *testing.T, b build, env []string, bin string, args ...string) {
	t.Helper()
	run := func(arg string) string {
		cmd := exec.Command(bin, append(slices.Clone(args), arg)...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", bin, arg, err, stderr.String())
		}
		return string(out)
	}
	v := run("--version")
	if !strings.HasPrefix(v, "pi-otel v"+b.version+"\ncommit:    "+b.commit+"\n") {
		t.Errorf("--version does not name version %s and commit %s:\n%s", b.version, b.commit, v)
	}
	// The date is the commit's: two builds of a commit are the same bytes.
	if d := b.commitDate(t); !d.IsZero() && !strings.Contains(v, "\nbuilt:     "+d.UTC().Format(time.RFC3339)+"\n") {
		t.Errorf("--version's date is not the commit's, %s:\n%s", d.UTC().Format(time.RFC3339), v)
	}
	if demo := run("demo"); !strings.Contains(demo, "invoke_agent pi") || !strings.Contains(demo, "execute_tool") {
		t.Errorf("demo printed no trace:\n%s", demo)
	}
}

// TestArchiveRuns: this machine's archive binary runs demo with nothing
// but the system on PATH, and its spans carry the version it prints.
func TestArchiveRuns(t *testing.T) {
	b := dist(t)
	bin := hostBinary(t, b, t.TempDir())
	checkRuns(t, b, bareEnv(t), bin)

	spans := filepath.Join(t.TempDir(), "spans.jsonl")
	cmd := exec.Command(bin, "demo", "--traces-file", spans)
	cmd.Env = bareEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("demo --traces-file: %v\n%s", err, out)
	}
	want := `{"key":"service.version","value":{"stringValue":"v` + b.version + `"}}`
	if data, err := os.ReadFile(spans); err != nil || !bytes.Contains(data, []byte(want)) {
		t.Errorf("the spans' resource lacks %s (%v)", want, err)
	}
}

// node is the directory of the node the tests install with, put first on
// PATH: Node 22 from scripts/deps.sh (what Pi needs), else the system's.
func node(t *testing.T) string {
	if d := os.Getenv("PI_OTEL_NODE_DIR"); d != "" {
		return d
	}
	n, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("no node: run scripts/deps.sh or install Node")
	}
	return filepath.Dir(n)
}

// tool is npm or npx on env's PATH.
func tool(t *testing.T, env []string, name string) string {
	t.Helper()
	for _, d := range filepath.SplitList(strings.TrimPrefix(env[0], "PATH=")) {
		if p := filepath.Join(d, name); exec.Command("test", "-x", p).Run() == nil {
			return p
		}
	}
	t.Fatalf("no %s on %s", name, env[0])
	return ""
}

func npmTarballs(t testing.TB, b build) (main, host string) {
	main = filepath.Join(b.dir, "npm", "pi-otel-"+b.version+".tgz")
	cpu := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	host = filepath.Join(b.dir, "npm", "pi-otel-"+runtime.GOOS+"-"+cpu+"-"+b.version+".tgz")
	for _, p := range platforms {
		tgz := filepath.Join(b.dir, "npm", "pi-otel-"+p.goos+"-"+p.npmCPU+"-"+b.version+".tgz")
		if _, err := os.Stat(tgz); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(main); err != nil {
		t.Fatal(err)
	}
	return main, host
}

func npm(t *testing.T, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command(tool(t, env, "npm"), args...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestNPM installs the packages from their files alone, globally and into
// a project, and runs pi-otel as an npm user does, with no Go on PATH.
func TestNPM(t *testing.T) {
	b := dist(t)
	main, host := npmTarballs(t, b)
	nodeDir := node(t)
	// An empty cache: nothing comes from an earlier install.
	env := append(bareEnv(t, nodeDir), "npm_config_cache="+t.TempDir(), "npm_config_update_notifier=false",
		"npm_config_fund=false", "npm_config_audit=false")
	nodeV, _ := exec.Command(filepath.Join(nodeDir, "node"), "--version").Output()
	npmCmd := exec.Command(tool(t, env, "npm"), "--version")
	npmCmd.Env = env
	npmV, _ := npmCmd.Output()
	t.Logf("installing with npm %s on node %s (%s)", bytes.TrimSpace(npmV), bytes.TrimSpace(nodeV), nodeDir)

	t.Run("global", func(t *testing.T) {
		prefix := t.TempDir()
		// --offline: the other platforms' packages are optional and not
		// looked up on the registry.
		npm(t, env, "install", "-g", "--offline", "--prefix", prefix, main, host)
		checkRuns(t, b, bareEnv(t, filepath.Join(prefix, "bin")), filepath.Join(prefix, "bin", "pi-otel"))
	})
	t.Run("project", func(t *testing.T) {
		prefix := t.TempDir()
		npm(t, env, "install", "--offline", "--prefix", prefix, main, host)
		checkRuns(t, b, bareEnv(t), filepath.Join(prefix, "node_modules", ".bin", "pi-otel"))
		// npx finds the project's install, as in `npx pi-otel demo`.
		checkRuns(t, b, env, tool(t, env, "npx"), "--offline", "--prefix", prefix, "pi-otel")
	})
}

// TestDeb: the .deb installs the binary, the user unit (enabled by nothing:
// no maintainer scripts), the docs and the licence; its binary runs and
// its unit passes systemd-analyze verify where that exists.
func TestDeb(t *testing.T) {
	b := dist(t)
	deb := pkgFile(t, b, ".deb")
	listing := command(t, "dpkg-deb", "-c", deb)
	for _, want := range []string{"./usr/bin/pi-otel", "./usr/lib/systemd/user/pi-otel-watch.service",
		"./usr/share/doc/pi-otel/copyright", "./usr/share/doc/pi-otel/README.md", "./usr/share/doc/pi-otel/docs/watch.md"} {
		if !containsField(listing, want) {
			t.Errorf("dpkg-deb -c lacks %s:\n%s", want, listing)
		}
	}
	if control := command(t, "dpkg-deb", "-I", deb); strings.Contains(control, "postinst") {
		t.Errorf("the .deb has a postinst; nothing is to be enabled at install:\n%s", control)
	}
	root := t.TempDir()
	command(t, "dpkg-deb", "-x", deb, root)
	checkRuns(t, b, bareEnv(t), filepath.Join(root, "usr/bin/pi-otel"))

	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("no systemd-analyze here: the unit is not verified")
		return
	}
	// verify checks that ExecStart's binary exists, and --root does not
	// work with --user: the copy verified runs the unpacked package's
	// binary, and is otherwise the unit. Any line it prints (an unknown
	// key, a bad value) fails.
	unit, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/user/pi-otel-watch.service"))
	if err != nil {
		t.Fatal(err)
	}
	const exec0 = "\nExecStart=/usr/bin/pi-otel "
	if !bytes.Contains(unit, []byte(exec0)) {
		t.Fatalf("the unit does not run /usr/bin/pi-otel:\n%s", unit)
	}
	dir := t.TempDir()
	copied := filepath.Join(dir, "pi-otel-watch.service")
	write(t, copied, bytes.Replace(unit, []byte(exec0), []byte("\nExecStart="+root+"/usr/bin/pi-otel "), 1), 0o644)
	cmd := exec.Command("systemd-analyze", "verify", "--user", copied)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+dir) // --user needs one
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestRPM: the .rpm holds what the .deb does, the licence where rpm keeps
// licences.
func TestRPM(t *testing.T) {
	b := dist(t)
	listing := command(t, "rpm", "-qlp", pkgFile(t, b, ".rpm"))
	for _, want := range []string{"/usr/bin/pi-otel", "/usr/lib/systemd/user/pi-otel-watch.service",
		"/usr/share/licenses/pi-otel/LICENSE", "/usr/share/doc/pi-otel/README.md", "/usr/share/doc/pi-otel/docs/watch.md"} {
		if !containsField(listing, want) {
			t.Errorf("rpm -qlp lacks %s:\n%s", want, listing)
		}
	}
	if scripts := command(t, "rpm", "-qp", "--scripts", pkgFile(t, b, ".rpm")); strings.TrimSpace(scripts) != "" {
		t.Errorf("the .rpm has scripts; nothing is to be enabled at install:\n%s", scripts)
	}
}

// pkgFile is this machine's architecture's package of the kind ext.
func pkgFile(t *testing.T, b build, ext string) string {
	arch := map[string]map[string]string{".deb": {"amd64": "amd64", "arm64": "arm64"},
		".rpm": {"amd64": "x86_64", "arm64": "aarch64"}}[ext][runtime.GOARCH]
	matches, _ := filepath.Glob(filepath.Join(b.dir, "*"+arch+ext))
	if len(matches) != 1 {
		t.Fatalf("%d %s packages for %s in %s", len(matches), ext, arch, b.dir)
	}
	return matches[0]
}

func command(t *testing.T, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s is not installed (scripts/deps.sh installs it)", name)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// containsField: a line of listing has want as one of its fields.
func containsField(listing, want string) bool {
	for _, l := range strings.Split(listing, "\n") {
		if slices.Contains(strings.Fields(l), want) {
			return true
		}
	}
	return false
}
