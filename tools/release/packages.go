package main

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/files"

	// Each registers its format with nfpm.
	_ "github.com/goreleaser/nfpm/v2/deb"
	_ "github.com/goreleaser/nfpm/v2/rpm"
)

// The .deb and .rpm describe pi-otel with these.
const (
	packageDescription = "OpenTelemetry traces and metrics for the Pi coding agent.\n" +
		"pi-otel wraps the pi CLI from the outside (run, rpc), or follows the\n" +
		"session files Pi writes (watch, with the systemd user unit in this\n" +
		"package, which nothing enables by itself), and exports every run as a\n" +
		"trace over OTLP."
	packageSummary = "OpenTelemetry traces and metrics for the Pi coding agent"
	maintainer     = "pi-otel maintainers <pi-otel@users.noreply.github.com>"
	homepage       = "https://github.com/pi-otel/pi-otel"
	// rpm's default build host is this machine's name, which would differ
	// from build to build.
	buildHost = "pi-otel-release"
)

// packageFile is one file a package installs besides the binary, from
// where it is in the repository; packager, if set, is the one format that
// has it.
type packageFile struct{ src, dst, packager string }

// packageFiles lists them in the order GoReleaser's configuration did; nfpm
// orders them by destination.
func (r *release) packageFiles() ([]packageFile, error) {
	list := []packageFile{
		{"packaging/pi-otel-watch.service", "/usr/lib/systemd/user/pi-otel-watch.service", ""},
		{"README.md", "/usr/share/doc/pi-otel/README.md", ""},
		{"CHANGELOG.md", "/usr/share/doc/pi-otel/CHANGELOG.md", ""},
		{"examples/watch-systemd/README.md", "/usr/share/doc/pi-otel/watch-systemd.md", ""},
	}
	// docs/*.md, listed here rather than globbed by nfpm, so that no
	// character of the clone's path is taken for a pattern.
	entries, err := os.ReadDir(filepath.Join(r.root, "docs"))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".md") {
			list = append(list, packageFile{"docs/" + e.Name(), "/usr/share/doc/pi-otel/docs/" + e.Name(), ""})
		}
	}
	// Where each packager looks for a licence.
	list = append(list,
		packageFile{"LICENSE", "/usr/share/doc/pi-otel/copyright", "deb"},
		packageFile{"LICENSE", "/usr/share/licenses/pi-otel/LICENSE", "rpm"},
	)
	return list, nil
}

// packageInfo is what nfpm builds a package of p from: the files above,
// 0644, and the binary in /usr/bin, 0755, all dated as the commit. No
// maintainer scripts: the unit is installed and nothing enables it.
func (r *release) packageInfo(p platform, bin string) (*nfpm.Info, error) {
	list, err := r.packageFiles()
	if err != nil {
		return nil, err
	}
	var contents files.Contents
	for _, f := range list {
		contents = append(contents, &files.Content{
			Source:      filepath.Join(r.root, f.src),
			Destination: f.dst,
			Packager:    f.packager,
			FileInfo:    &files.ContentFileInfo{Mode: 0o644, MTime: r.date},
		})
	}
	contents = append(contents, &files.Content{
		Source:      bin,
		Destination: "/usr/bin/pi-otel",
		FileInfo:    &files.ContentFileInfo{Mode: 0o755, MTime: r.date},
	})
	info := &nfpm.Info{
		Name:            "pi-otel",
		Arch:            p.goarch,
		Platform:        p.goos,
		Version:         r.version, // nfpm splits off the prerelease: 0.0.1~snapshot.gabc1234
		Section:         "devel",
		Maintainer:      maintainer,
		Description:     packageDescription,
		Vendor:          "pi-otel",
		Homepage:        homepage,
		License:         "Apache-2.0",
		MTime:           r.date,
		DisableGlobbing: true,
		Overridables: nfpm.Overridables{
			Contents: contents,
			RPM: nfpm.RPM{
				Summary:   packageSummary,
				Group:     "Development/Tools",
				BuildHost: buildHost,
			},
		},
	}
	// The .deb's Architecture-Variant (amd64v1), as GoReleaser set it.
	if levelVar, level := p.level(); levelVar == "GOAMD64" {
		info.Deb.ArchVariant = level
	}
	return nfpm.WithDefaults(info), nil
}

// linuxPackage writes p's package of format (deb or rpm) under the name
// nfpm's conventions give it (pi-otel_0.0.1~snapshot.gabc1234_amd64.deb,
// pi-otel-0.0.1~snapshot.gabc1234-1.x86_64.rpm) and returns that name.
func (r *release) linuxPackage(p platform, format, bin string) (string, error) {
	packager, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	info, err := r.packageInfo(p, bin)
	if err != nil {
		return "", err
	}
	name := packager.ConventionalFileName(info)
	path := filepath.Join(r.dist, name)
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := packager.Package(info, f); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return name, os.Chtimes(path, r.date, r.date)
}
