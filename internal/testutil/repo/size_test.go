package repo

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the longest a non-test Go file may be: past it, a file holds
// more than one idea and is split by idea.
const maxLines = 600

// TestFilesStaySmall holds every non-test Go file of the module to
// maxLines.
func TestFilesStaySmall(t *testing.T) {
	root := Root()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if n := bytes.Count(b, []byte("\n")); n > maxLines {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("%s has %d lines, more than %d: split it by idea", rel, n, maxLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
