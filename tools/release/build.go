package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// platform is one GOOS/GOARCH a release has a binary for. Windows is not
// built: internal/launch, internal/outfile and the spool need Unix process
// groups, signals, flock and fifos (docs/releasing.md).
type platform struct{ goos, goarch string }

var platforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// level is the GOAMD64 or GOARM64 variable and the baseline it is set to,
// so that a GOAMD64=v3 in the maintainer's environment cannot build
// binaries that older CPUs do not run.
func (p platform) level() (string, string) {
	if p.goarch == "arm64" {
		return "GOARM64", "v8.0"
	}
	return "GOAMD64", "v1"
}

const buildinfo = "github.com/pi-otel/pi-otel/internal/buildinfo"

// build compiles cmd/pi-otel for p into dist/pi-otel_GOOS_GOARCH_LEVEL (the
// directories GoReleaser used), static, stripped and stamped with the
// version, the commit and its time, which is also the file's time.
func (r *release) build(p platform) (string, error) {
	levelVar, level := p.level()
	bin := filepath.Join(r.dist, "pi-otel_"+p.goos+"_"+p.goarch+"_"+level, "pi-otel")
	ldflags := strings.Join([]string{
		"-s -w",
		"-X " + buildinfo + ".version=v" + r.version,
		"-X " + buildinfo + ".commit=" + r.commit,
		"-X " + buildinfo + ".date=" + r.date.Format(time.RFC3339),
	}, " ")
	// -trimpath: no path of this machine in the binary. -buildvcs=false:
	// the version is stamped above; the VCS settings would add the commit
	// time again and make a build from a linked worktree differ.
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags="+ldflags, "-o", bin, "./cmd/pi-otel")
	cmd.Dir = r.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.goos, "GOARCH="+p.goarch, levelVar+"="+level)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, os.Chtimes(bin, r.date, r.date)
}

// archiveFiles are the files beside the binary in each archive: where each
// is in the repository, and its name in the archive, in the archive's
// order.
var archiveFiles = []struct{ src, name string }{
	{"CHANGELOG.md", "CHANGELOG.md"},
	{"LICENSE", "LICENSE"},
	{"README.md", "README.md"},
	{"packaging/pi-otel-watch.service", "pi-otel-watch.service"},
}

// archive writes pi-otel_VERSION_GOOS_GOARCH.tar.gz: the docs, the unit and
// then the binary, in a directory of the archive's name. Owner, modes and
// times are fixed rather than read from this clone: root, 0644 and 0755,
// the commit's time.
func (r *release) archive(p platform, bin string) (string, error) {
	base := "pi-otel_" + r.version + "_" + p.goos + "_" + p.goarch
	name := base + ".tar.gz"
	path := filepath.Join(r.dist, name)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	// No name or time in the gzip header.
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	tw := tar.NewWriter(zw)
	add := func(src, dst string, mode int64) error {
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		// No Format: the writer picks ustar, which has room for all of it.
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     base + "/" + dst,
			Size:     int64(len(data)),
			Mode:     mode,
			ModTime:  r.date,
			Uname:    "root",
			Gname:    "root",
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	}
	for _, a := range archiveFiles {
		if err := add(filepath.Join(r.root, a.src), a.name, 0o644); err != nil {
			return "", err
		}
	}
	if err := add(bin, "pi-otel", 0o755); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return name, os.Chtimes(path, r.date, r.date)
}

// checksums writes pi-otel_VERSION_checksums.txt, the SHA-256 of each
// archive and package as sha256sum prints it (`sha256sum -c` checks it),
// in the order of the names.
func (r *release) checksums(names []string) error {
	names = slices.Sorted(slices.Values(names))
	var b strings.Builder
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(r.dist, name))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		b.WriteString(hex.EncodeToString(sum[:]) + "  " + name + "\n")
	}
	return r.writeFile("pi-otel_"+r.version+"_checksums.txt", []byte(b.String()))
}
