// Command release builds pi-otel's release artifacts into dist/ and
// publishes nothing: the binaries for linux and darwin on amd64 and arm64,
// a tar.gz archive of each, the .deb and .rpm packages (through nfpm's Go
// API), the SHA-256 checksums file and metadata.json, which names the
// version. scripts/release.sh runs it and adds the npm packages;
// docs/releasing.md is the maintainer's guide.
//
//	release -snapshot   any commit, any tree: the next patch after the last
//	                    vX.Y.Z tag, -snapshot.g<short commit>
//	release             a clean tree at a vX.Y.Z tag: that version
//
// Every time in an artifact is the commit's, and nothing in one comes from
// the machine, the user or the clock, so two builds of one commit are the
// same bytes.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"
)

func main() {
	snapshot := flag.Bool("snapshot", false, "build a snapshot of any commit and tree instead of the release of HEAD's tag")
	root := flag.String("root", ".", "the pi-otel repository to build")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: release [-snapshot] [-root DIR]\nBuilds pi-otel's release artifacts into DIR/dist.")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*root, *snapshot); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(root string, snapshot bool) error {
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	// dist/ is removed below: be sure root is the repository.
	if _, err := os.Stat(filepath.Join(root, "cmd", "pi-otel")); err != nil {
		return fmt.Errorf("%s is not the pi-otel repository: %w", root, err)
	}
	r, err := describe(root, snapshot)
	if err != nil {
		return err
	}
	r.dist = filepath.Join(root, "dist")
	kind := "release"
	if snapshot {
		kind = "snapshot"
	}
	logf("%s %s of commit %s (%s)", kind, r.version, r.commit, r.date.Format(time.RFC3339))
	start := time.Now()

	if err := os.RemoveAll(r.dist); err != nil {
		return err
	}
	if err := os.MkdirAll(r.dist, 0o755); err != nil {
		return err
	}
	artifacts, err := r.platforms()
	if err != nil {
		return err
	}
	if err := r.checksums(artifacts); err != nil {
		return err
	}
	if err := r.metadata(); err != nil {
		return err
	}
	logf("built %d archives and packages in %s", len(artifacts), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// platforms builds, archives and packages each platform, as many at a time
// as there are cores (the link step of a go build uses one), and returns
// the file names of the archives and packages.
func (r *release) platforms() ([]string, error) {
	var (
		mu        sync.Mutex
		artifacts []string
		errs      []error
		wg        sync.WaitGroup
		slots     = make(chan struct{}, max(runtime.NumCPU(), 1))
	)
	for _, p := range platforms {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			names, err := r.platform(p)
			mu.Lock()
			defer mu.Unlock()
			artifacts = append(artifacts, names...)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", p.goos, p.goarch, err))
			}
		})
	}
	wg.Wait()
	return artifacts, errors.Join(errs...)
}

func (r *release) platform(p platform) ([]string, error) {
	bin, err := r.build(p)
	if err != nil {
		return nil, err
	}
	archive, err := r.archive(p, bin)
	if err != nil {
		return nil, err
	}
	names := []string{archive}
	logf("wrote %s", archive)
	if p.goos != "linux" {
		return names, nil
	}
	for _, format := range []string{"deb", "rpm"} {
		name, err := r.linuxPackage(p, format, bin)
		if err != nil {
			return names, err
		}
		logf("wrote %s", name)
		names = append(names, name)
	}
	return names, nil
}

// metadata writes dist/metadata.json, from which scripts/release.sh and
// the release tests read the version and the commit.
func (r *release) metadata() error {
	b, err := json.MarshalIndent(struct {
		ProjectName string `json:"project_name"`
		Tag         string `json:"tag"`
		Version     string `json:"version"`
		Commit      string `json:"commit"`
		Date        string `json:"date"`
	}{"pi-otel", r.tag, r.version, r.commit, r.date.Format(time.RFC3339)}, "", "  ")
	if err != nil {
		return err
	}
	return r.writeFile("metadata.json", append(b, '\n'))
}

// writeFile writes dist/name, dated as the commit.
func (r *release) writeFile(name string, data []byte) error {
	path := filepath.Join(r.dist, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	return os.Chtimes(path, r.date, r.date)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "release: "+format+"\n", args...)
}
