package sessionwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// Followers that each read one share of a Partition trace what one
// follower of every file traces, each run once: two names of one file
// are one share's, and after the first scan a file renamed to a new name,
// one renamed over a file of another share, and a new file are each read
// by one follower.
func TestSharesTraceWhatOneFollowerTraces(t *testing.T) {
	one := sharedScan(t, 1)
	two := sharedScan(t, 2)
	if !slices.Equal(one, two) {
		t.Errorf("traced by two shares\n%v\nby one follower\n%v", two, one)
	}
	if len(slices.Compact(slices.Clone(one))) != len(one) {
		t.Errorf("a run traced twice: %v", one)
	}
}

// sharedScan runs the scenario of TestSharesTraceWhatOneFollowerTraces
// with n followers and returns the runs traced, sorted.
func sharedScan(t *testing.T, n int) []string {
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
	write("b.jsonl", 500) // the next: group 1
	write("z.jsonl", 150) // group 1 too
	write("c.jsonl", 10)  // group 0 (a counts twice)
	write("d.jsonl", 10)
	if err := os.Link(path("a.jsonl"), path("e.jsonl")); err != nil {
		t.Fatal(err) // the hard link is the case under test
	}
	var parts *Parts
	if n > 1 {
		parts = Partition([]string{dir}, n)
		group := func(name string) int { return parts.files[path(name)].group }
		if group("a.jsonl") != group("e.jsonl") {
			t.Fatalf("two names of one file in groups %d and %d", group("a.jsonl"), group("e.jsonl"))
		}
		if group("b.jsonl") != 1 || group("z.jsonl") != 1 || group("c.jsonl") != 0 {
			t.Fatalf("groups b %d, z %d, c %d; want 1, 1, 0", group("b.jsonl"), group("z.jsonl"), group("c.jsonl"))
		}
	}
	b := &book{}
	var fs []*Follower
	for i := range n {
		cfg := Config{
			Dirs: []string{dir}, Flush: b.flush, Since: SinceAll,
			IsSession: func(first []byte) bool { return string(first) == "H" },
		}
		if parts != nil {
			cfg.Share = parts.Share(i)
		}
		f := b.follow(cfg)
		if err := f.load(); err != nil {
			t.Fatal(err)
		}
		f.scan(true)
		fs = append(fs, f)
	}
	// After the first scan: b renamed to a new name, z over c, a new file.
	for _, mv := range [][2]string{{"b.jsonl", "moved.jsonl"}, {"z.jsonl", "c.jsonl"}} {
		if err := os.Rename(path(mv[0]), path(mv[1])); err != nil {
			t.Fatal(err)
		}
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
		t.Errorf("%d followers: %d files followed, want 5: a (e its second name), b (as moved), z (as c), d, new", n, files)
	}
	slices.Sort(b.traced)
	return b.traced
}
