package sessionwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A first scan reads a child session's files after its parent's, however
// the walk ordered them, so that the parent's trace has noted the tool
// that ran the child; unrelated files keep the walk's order, the files of
// one session stay together, and headers naming each other end.
func TestFirstScanReadsParentsFirst(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	write := func(name, id, parent string) string {
		t.Helper()
		h := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"parentSession":%q}`+"\n", id, parent)
		if err := os.WriteFile(path(name), []byte(h), 0o600); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	walked := []string{
		write("0-grandchild.jsonl", "g", path("a-child.jsonl")),
		write("a-child.jsonl", "c", path("b-parent.jsonl")),
		write("b-parent.jsonl", "p", ""),
		write("c-other.jsonl", "o", ""),
		write("d-loop.jsonl", "x", path("e-loop.jsonl")),
		write("e-loop.jsonl", "y", path("d-loop.jsonl")),
		write("f-gone-parent.jsonl", "z", path("no-such.jsonl")),
	}
	f := New(Config{})
	got := f.bySession(slices.Clone(walked))
	want := []string{
		path("b-parent.jsonl"), path("c-other.jsonl"), path("f-gone-parent.jsonl"),
		path("a-child.jsonl"), path("0-grandchild.jsonl"),
		path("d-loop.jsonl"), path("e-loop.jsonl"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("order\n%q\nwant\n%q", got, want)
	}
	// The same from what Partition read, with nothing read again.
	f = New(Config{Share: Partition([]string{dir}, 1).Share(0)})
	for _, p := range walked {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.bySession(slices.Clone(walked)); !slices.Equal(got, want) {
		t.Errorf("order from a share\n%q\nwant\n%q", got, want)
	}
}
