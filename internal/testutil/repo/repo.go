// Package repo locates files of this repository from tests, wherever the
// test's package sits, so that moving a package never breaks a path.
package repo

import (
	"path/filepath"
	"runtime"
)

// Root is the repository's top directory.
func Root() string {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		panic("repo: cannot locate this source file")
	}
	return filepath.Join(filepath.Dir(self), "..", "..", "..")
}

// Path joins a slash-separated path relative to the root.
func Path(rel string) string {
	return filepath.Join(Root(), filepath.FromSlash(rel))
}

// Captures is the path of one recorded Pi stream, e.g.
// Captures("pi-1.6.0", "bash-tool.jsonl").
func Captures(version, name string) string {
	return filepath.Join(Root(), "testdata", "captures", version, name)
}
