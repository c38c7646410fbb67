// Package buildinfo says which build of pi-otel is running: its version,
// the commit it was built from, when, with which Go, and the Pi releases
// its tests run against. A bug report quotes `pi-otel --version`, and
// service.version carries the same version.
//
// A release build stamps version, commit and date with the linker
// (scripts/release.sh, tools/release):
//
//	-X github.com/pi-otel/pi-otel/internal/buildinfo.version=v1.2.3
//
// Any other build takes what the Go command recorded: the module's
// version (a pseudo-version such as v0.0.0-20261205101500-0123456789ab
// when built from a git work tree with VCS stamping on) and the vcs.*
// settings. A build with -buildvcs=false, or from a tree that is not a
// repository, records neither; the version is then "dev" and the commit
// unknown.
package buildinfo

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Stamped by the linker in release builds; empty otherwise.
var (
	version string
	commit  string
	date    string // RFC 3339
)

// TestedPi are the Pi releases the test suite runs pi-otel against, newest
// first. scripts/deps.sh installs these and the README names them; a test
// keeps the three in step.
var TestedPi = []string{"1.6.0", "1.0.3", "0.73.1"}

// Dev is the version of a build that knows none.
const Dev = "dev"

// Info describes one build.
type Info struct {
	// Version is the release's tag, the module's (pseudo-)version, or Dev.
	Version string
	// Commit is the full revision, or empty when unknown.
	Commit string
	// Modified reports uncommitted changes in the tree it was built from.
	Modified bool
	// Date is when a release was built (its commit's time, so that two
	// builds of one commit are the same bytes) or, for another build, the
	// commit's time; zero when unknown.
	Date      time.Time
	GoVersion string
	Platform  string // GOOS/GOARCH
}

// Read returns this binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, version, commit, date)
}

// fromBuild merges the linker's stamps (which win) with what the Go
// command recorded; bi may be nil.
func fromBuild(bi *debug.BuildInfo, stampVersion, stampCommit, stampDate string) Info {
	info := Info{Version: Dev, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		}
		info.GoVersion = cmp.Or(bi.GoVersion, info.GoVersion)
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			case "vcs.time":
				if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
					info.Date = t
				}
			}
		}
	}
	info.Version = cmp.Or(stampVersion, info.Version)
	if stampCommit != "" {
		info.Commit, info.Modified = stampCommit, false
	}
	if t, err := time.Parse(time.RFC3339, stampDate); err == nil {
		info.Date = t
	}
	return info
}

// String is what `pi-otel --version` prints: the version on the first
// line, as `pi-otel v1.2.3`, then one fact per line.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pi-otel %s\n", i.Version)
	c := i.Commit
	switch {
	case c == "":
		c = "unknown (built without version control information)"
	case i.Modified:
		c += " (with uncommitted changes)"
	}
	fmt.Fprintf(&b, "commit:    %s\n", c)
	d := "unknown"
	if !i.Date.IsZero() {
		d = i.Date.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(&b, "built:     %s\n", d)
	fmt.Fprintf(&b, "go:        %s %s\n", i.GoVersion, i.Platform)
	fmt.Fprintf(&b, "tested with Pi %s\n", strings.Join(TestedPi, ", "))
	return b.String()
}

// ServiceVersion is the version for service.version: the same as the
// first line of --version, or empty for a build that knows none.
func (i Info) ServiceVersion() string {
	if i.Version == Dev {
		return ""
	}
	return i.Version
}
