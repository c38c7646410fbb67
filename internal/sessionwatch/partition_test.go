package sessionwatch

import (
	"fmt"
	"maps"
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

	parts := Partition([]string{dir}, 2)
	groups := map[string]int{}
	for p, pt := range parts.files {
		groups[p] = pt.group
	}
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
	for p, pt := range Partition([]string{dir}, 1).files {
		if pt.group != 0 {
			t.Errorf("one group: %s in %d", p, pt.group)
		}
	}
}

// Followers that each read one share of a Partition read every file
// once between them: two names of one file are one share's, a file
// renamed since is read on by the share that read it, and a new file is
// one share's.
func TestSharesReadEachFileOnce(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	write := func(name string, pad int) {
		t.Helper()
		// The fake format has no session ids: nothing but identity
		// joins two names of one file.
		if err := os.WriteFile(path(name), []byte("H\n"+strings.Repeat("T\n", pad)+"U\nA\nU\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.jsonl", 300) // the largest: group 0
	write("b.jsonl", 200) // the next: group 1
	write("c.jsonl", 10)
	write("d.jsonl", 10)
	if err := os.Link(path("a.jsonl"), path("e.jsonl")); err != nil {
		t.Skip(err)
	}
	parts := Partition([]string{dir}, 2)
	if a, e := parts.files[path("a.jsonl")].group, parts.files[path("e.jsonl")].group; a != e {
		t.Fatalf("two names of one file in groups %d and %d", a, e)
	}
	if g := parts.files[path("b.jsonl")].group; g != 1 {
		t.Fatalf("b.jsonl in group %d, want 1", g)
	}
	b := &book{}
	var fs []*Follower
	for i := range 2 {
		f := New(Config{
			Dirs: []string{dir}, NewTracer: b.newTracer, Flush: b.flush, Since: SinceAll,
			IsSession: func(first []byte) bool { return string(first) == "H" },
			Share:     parts.Share(i),
		})
		if err := f.load(); err != nil {
			t.Fatal(err)
		}
		f.scan(true)
		fs = append(fs, f)
	}
	// After the first scan: b renamed (its runs are read), a new file.
	if err := os.Rename(path("b.jsonl"), path("moved.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("new.jsonl"), []byte("H\nU\nA\nU\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, f := range fs {
		f.scan(false)
		f.cfg.Exited = func() bool { return true }
		if err := f.stop(); err != nil {
			t.Fatal(err)
		}
		files += f.Stats().Files
	}
	if files != 5 {
		t.Errorf("%d files followed, want 5: a (e its second name), b (as moved), c, d, new", files)
	}
	traced := map[string]int{}
	for _, k := range b.traced {
		traced[strings.SplitN(k, "@", 2)[0]]++
	}
	want := map[string]int{"b.jsonl": 2, "c.jsonl": 2, "d.jsonl": 2, "new.jsonl": 2}
	// a's runs, under whichever of its names was read.
	traced["a.jsonl"] += traced["e.jsonl"]
	delete(traced, "e.jsonl")
	want["a.jsonl"] = 2
	if !maps.Equal(traced, want) {
		t.Errorf("runs traced per file %v, want %v (all: %v)", traced, want, b.traced)
	}
}
