package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// release is what one build is of: the repository's state and the
// version it gets.
type release struct {
	root    string    // the repository
	dist    string    // root/dist
	version string    // without the v, as in file names and npm: 1.2.3, 1.2.4-snapshot.gabc1234
	tag     string    // the release's tag; for a snapshot the last one, or v0.0.0
	commit  string    // HEAD, 40 hex digits
	date    time.Time // HEAD's commit time, in UTC: every time in the artifacts
}

// semverTag is a vX.Y.Z tag, with a prerelease and build metadata if any.
var semverTag = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// describe reads HEAD's commit and works out the version: for a release
// the tag on HEAD, which must be a vX.Y.Z on a clean tree; for a snapshot
// the next patch after the last vX.Y.Z tag (v0.0.0 before the first), with
// -snapshot.g and the short commit, which npm takes as a prerelease.
func describe(root string, snapshot bool) (*release, error) {
	r := &release{root: root}
	var err error
	if r.commit, err = git(root, "rev-parse", "HEAD"); err != nil {
		return nil, err
	}
	ct, err := git(root, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return nil, err
	}
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("commit time %q: %w", ct, err)
	}
	r.date = time.Unix(secs, 0).UTC()

	if !snapshot {
		r.tag, err = git(root, "describe", "--exact-match", "--tags", "--match", "v[0-9]*", "HEAD")
		if err != nil {
			return nil, fmt.Errorf("HEAD has no vX.Y.Z tag (or pass -snapshot): %w", err)
		}
		if !semverTag.MatchString(r.tag) {
			return nil, fmt.Errorf("HEAD's tag %s is not vX.Y.Z", r.tag)
		}
		status, err := git(root, "status", "--porcelain")
		if err != nil {
			return nil, err
		}
		if status != "" {
			return nil, fmt.Errorf("the work tree has changes; a release is built from a clean tree:\n%s", status)
		}
		r.version = strings.TrimPrefix(r.tag, "v")
		return r, nil
	}

	// No tag yet is not an error: the first snapshots follow v0.0.0.
	r.tag, err = git(root, "describe", "--tags", "--abbrev=0", "--match", "v[0-9]*", "HEAD")
	if err != nil {
		r.tag = "v0.0.0"
	}
	short, err := git(root, "rev-parse", "--short", "HEAD")
	if err != nil {
		return nil, err
	}
	next, err := nextPatch(r.tag)
	if err != nil {
		return nil, err
	}
	r.version = next + "-snapshot.g" + short
	return r, nil
}

// nextPatch is the version after tag, without the v: the next patch, or
// for a prerelease tag its release (1.2.3-rc.1 comes before 1.2.3). This is
// what GoReleaser's incpatch gave the snapshots before.
func nextPatch(tag string) (string, error) {
	m := semverTag.FindStringSubmatch(tag)
	if m == nil {
		return "", fmt.Errorf("the last tag, %s, is not vX.Y.Z", tag)
	}
	if m[4] != "" {
		return m[1] + "." + m[2] + "." + m[3], nil
	}
	patch, err := strconv.ParseUint(m[3], 10, 64)
	if err != nil {
		return "", fmt.Errorf("tag %s: %w", tag, err)
	}
	return m[1] + "." + m[2] + "." + strconv.FormatUint(patch+1, 10), nil
}

// git runs git in root and returns its output, trimmed.
func git(root string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("git", append([]string{"-C", root}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(string(out)), nil
}
