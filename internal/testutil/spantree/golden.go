package spantree

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

var update = flag.Bool("update", false, "rewrite the golden span trees (*.tree) from what the tests build")

// Updating reports whether the test binary runs with -update.
func Updating() bool { return *update }

// CaptureTree is the golden tree of a capture, e.g.
// CaptureTree("pi-1.6.0", "bash-tool").
func CaptureTree(version, name string) string { return repo.Captures(version, name+".tree") }

// TranscriptTree is the golden tree of an RPC transcript.
func TranscriptTree(name string) string {
	return repo.Path("internal/rpc/testdata/transcripts/" + name + ".tree")
}

// Golden compares the canonical form of forest with the golden file at
// path; with -update it writes the file first. The tests that derive a
// tree from a committed stream own its golden file and call this.
func Golden(tb testing.TB, path string, forest []*Node) {
	tb.Helper()
	got := Canonical(forest)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	compare(tb, path, got, Read(tb, path))
}

// GoldenKeys is Golden for a form that shows keys instead of the
// canonical ones: a test that holds other attributes to a file.
func GoldenKeys(tb testing.TB, path string, forest []*Node, keys ...string) {
	tb.Helper()
	got := Render(forest, keys...)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	compare(tb, path, got, Read(tb, path))
}

// Want compares the canonical form of forest with the golden file at path
// and never writes it: a live run is held to the tree of its capture.
func Want(tb testing.TB, path string, forest []*Node) {
	tb.Helper()
	compare(tb, path, Canonical(forest), Read(tb, path))
}

// Read returns a golden file.
func Read(tb testing.TB, path string) string {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (write it with -update)", err)
	}
	return string(b)
}

func compare(tb testing.TB, path, got, want string) {
	tb.Helper()
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	line := 0
	for line < len(g) && line < len(w) && g[line] == w[line] {
		line++
	}
	tb.Fatalf("span trees differ from %s at line %d\ngot:\n%s\nwant:\n%s", filepath.Base(path), line+1, got, want)
}
