package sessionwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Files one follower must see together land in one group: a session's
// copies, wherever they are, and a child or a fork with the parent its
// header names; the rest are spread by size.
func TestPartitionKeepsSessionTreesTogether(t *testing.T) {
	dir := t.TempDir()
	write := func(name, id, parent string, size int) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		h := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"parentSession":%q}`+"\n", id, parent)
		if err := os.WriteFile(p, []byte(h+strings.Repeat("x", size)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	parent := write("a/parent.jsonl", "p", "", 100)
	child := write("b/child.jsonl", "c", parent, 100)
	grandchild := write("c/grand.jsonl", "g", child, 100)
	copyOfChild := write("backup/child.jsonl", "c", parent, 100)
	fork := write("a/fork.jsonl", "f", parent, 100)
	big := write("d/big.jsonl", "big", "", 10000)
	other := write("d/other.jsonl", "o", "", 300)

	groups := Partition([]string{dir}, 2)
	if len(groups) != 7 {
		t.Fatalf("%d files grouped, want 7: %v", len(groups), groups)
	}
	for _, p := range []string{child, grandchild, copyOfChild, fork} {
		if groups[p] != groups[parent] {
			t.Errorf("%s in group %d, its parent's in %d", p, groups[p], groups[parent])
		}
	}
	if groups[big] == groups[parent] {
		t.Errorf("the largest tree and the next share group %d: not balanced", groups[big])
	}
	if groups[other] != groups[parent] {
		t.Errorf("the small session joined the largest group %d, not the lighter %d", groups[other], groups[parent])
	}
	for p, g := range Partition([]string{dir}, 1) {
		if g != 0 {
			t.Errorf("one group: %s in %d", p, g)
		}
	}
}
