// Package repo locates files of this repository from tests, wherever the
// test's package sits, so that moving a package never breaks a path.
package repo

import (
	"bytes"
	"os"
	"path/filepath"
)

// Root is the repository's top directory: the nearest folder above the
// working directory (a test's package folder) whose go.mod declares this
// module. Not runtime.Caller: under -trimpath, which scripts/test.sh sets so
// that the build cache does not depend on where the clone sits, a source
// file's recorded path is its import path, not a place on disk.
func Root() string {
	dir, err := os.Getwd()
	if err != nil {
		panic("repo: " + err.Error())
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(mod, []byte("module "+module+"\n")) {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			panic("repo: no go.mod of " + module + " above the working directory")
		}
		dir = up
	}
}

const module = "github.com/pi-otel/pi-otel"

// Path joins a slash-separated path relative to the root.
func Path(rel string) string {
	return filepath.Join(Root(), filepath.FromSlash(rel))
}

// Captures is the path of one recorded Pi stream, e.g.
// Captures("pi-1.6.0", "bash-tool.jsonl").
func Captures(version, name string) string {
	return filepath.Join(Root(), "testdata", "captures", version, name)
}
