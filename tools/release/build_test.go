package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeRelease is a release of this repository's files with a made-up
// binary, into a dist of its own.
func fakeRelease(t *testing.T) (*release, string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	r := &release{
		root:    root,
		dist:    t.TempDir(),
		version: "0.0.1-snapshot.gc2d240a",
		commit:  strings.Repeat("c", 40),
		date:    time.Date(2026, 12, 5, 14, 40, 5, 0, time.UTC),
	}
	bin := filepath.Join(t.TempDir(), "pi-otel")
	if err := os.WriteFile(bin, []byte("\x7fELF not really"), 0o700); err != nil {
		t.Fatal(err)
	}
	return r, bin
}

// TestArchive: the docs, the unit and the binary, in a directory of the
// archive's name, owned by root, 0644 and 0755, dated as the commit
// whatever the files on disk say; and the same bytes a second time.
func TestArchive(t *testing.T) {
	r, bin := fakeRelease(t)
	p := platform{"darwin", "arm64"}
	name, err := r.archive(p, bin)
	if err != nil {
		t.Fatal(err)
	}
	if name != "pi-otel_0.0.1-snapshot.gc2d240a_darwin_arm64.tar.gz" {
		t.Errorf("archive name %s", name)
	}
	first, err := os.ReadFile(filepath.Join(r.dist, name))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name)
		mode := int64(0o644)
		if strings.HasSuffix(h.Name, "/pi-otel") {
			mode = 0o755
		}
		if h.Mode != mode || h.Uid != 0 || h.Gid != 0 || h.Uname != "root" || h.Gname != "root" || !h.ModTime.Equal(r.date) {
			t.Errorf("%s: mode %o, owner %d:%d %s:%s, time %v", h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
	}
	dir := "pi-otel_0.0.1-snapshot.gc2d240a_darwin_arm64/"
	want := []string{dir + "CHANGELOG.md", dir + "LICENSE", dir + "README.md", dir + "pi-otel-watch.service", dir + "pi-otel"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("archive holds\n%v\nwant\n%v", got, want)
	}

	if _, err := r.archive(p, bin); err != nil {
		t.Fatal(err)
	}
	if second, _ := os.ReadFile(filepath.Join(r.dist, name)); !bytes.Equal(first, second) {
		t.Error("a second archive of the same files differs")
	}
}

// TestLinuxPackages: the names GoReleaser gave them, and the same bytes a
// second time (no time, host or path of this build in them).
func TestLinuxPackages(t *testing.T) {
	r, bin := fakeRelease(t)
	want := map[string]map[string]string{
		"amd64": {"deb": "pi-otel_0.0.1~snapshot.gc2d240a_amd64.deb", "rpm": "pi-otel-0.0.1~snapshot.gc2d240a-1.x86_64.rpm"},
		"arm64": {"deb": "pi-otel_0.0.1~snapshot.gc2d240a_arm64.deb", "rpm": "pi-otel-0.0.1~snapshot.gc2d240a-1.aarch64.rpm"},
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		for _, format := range []string{"deb", "rpm"} {
			p := platform{"linux", goarch}
			name, err := r.linuxPackage(p, format, bin)
			if err != nil {
				t.Fatal(err)
			}
			if name != want[goarch][format] {
				t.Errorf("%s %s named %s, want %s", goarch, format, name, want[goarch][format])
			}
			first, err := os.ReadFile(filepath.Join(r.dist, name))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.linuxPackage(p, format, bin); err != nil {
				t.Fatal(err)
			}
			if second, _ := os.ReadFile(filepath.Join(r.dist, name)); !bytes.Equal(first, second) {
				t.Errorf("%s: a second build differs", name)
			}
		}
	}
}

// TestChecksums: sha256sum's format, sorted by name.
func TestChecksums(t *testing.T) {
	r, _ := fakeRelease(t)
	for _, name := range []string{"b.deb", "a.tar.gz"} {
		if err := os.WriteFile(filepath.Join(r.dist, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.checksums([]string{"b.deb", "a.tar.gz"}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(r.dist, "pi-otel_0.0.1-snapshot.gc2d240a_checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// printf a.tar.gz | sha256sum; printf b.deb | sha256sum
	want := "0a67bba7da46793c9f1908a7eec3d06a11ba7bc00bf749c31bb134f4f45ebcad  a.tar.gz\n" +
		"a07a7760eebd8447f79168b7e40e44cc0ff961fecc97f6b6cac63ee18b965121  b.deb\n"
	if string(got) != want {
		t.Errorf("checksums file\n%s\nwant\n%s", got, want)
	}
}
