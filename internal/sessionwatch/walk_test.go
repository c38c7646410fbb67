package sessionwatch

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A file created in a folder after the walker first read it, but before fn
// was called for the folder (where the follower places its watch), is
// walked: no event will come for it, and the next full scan is minutes
// away.
func TestWalkSeesWhatCameBeforeTheWatch(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	var files []string
	err := walkTree(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && filepath.Base(p) == "new" {
			// As Pi writing its first session file into a new project
			// folder, just as the watch is placed.
			if err := os.WriteFile(filepath.Join(p, "s.jsonl"), []byte("{}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return nil
		}
		if !d.IsDir() {
			files = append(files, filepath.Base(p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "s.jsonl") {
		t.Errorf("walked %v: the file created as the folder's watch was placed was not seen", files)
	}
}

// Run refuses a Config it cannot follow with, before it touches the
// state, as a Collector component's Validate does.
func TestConfigValidate(t *testing.T) {
	tracer := func(TracerSpec) Tracer { return nil }
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{NewTracer: tracer}, "no directory"},
		{Config{Dirs: []string{t.TempDir()}}, "no NewTracer"},
	} {
		err := New(c.cfg).Run(t.Context())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: Run = %v, want %q", c.cfg, err, c.want)
		}
	}
}
