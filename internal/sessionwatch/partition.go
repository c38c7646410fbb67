package sessionwatch

import (
	"cmp"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Partition splits the session files under roots into at most n groups
// that can be read apart, each by a Follower of its own that accepts only
// its group (Config.Accept), for a history read on several cores. What
// one Follower must see together is in one group: the files of one
// session (copies, a second name), which its ledger counts once, and a
// child session or a fork with the file its header names
// (parentSession), whose trace notes the child's tool. Groups are
// balanced by size. It returns each file's group, by the path a
// Follower's walk gives it; a file it did not see (written since) is
// group 0's.
func Partition(roots []string, n int) map[string]int {
	type cand struct {
		path          string
		session       string
		parentSession string
		size          int64
	}
	var cs []cand
	for _, r := range roots {
		_ = walkTree(filepath.Clean(r), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() || !strings.HasSuffix(p, ".jsonl") {
				return nil
			}
			c := cand{path: p}
			if info, err := d.Info(); err == nil {
				c.size = info.Size()
			}
			h, _ := readHeader(p)
			c.session, c.parentSession = h.ID, h.ParentSession
			cs = append(cs, c)
			return nil
		})
	}
	// Union-find over the files: joined by a shared session id and by a
	// header's parentSession.
	up := make([]int, len(cs))
	for i := range up {
		up[i] = i
	}
	root := func(i int) int {
		for up[i] != i {
			up[i] = up[up[i]]
			i = up[i]
		}
		return i
	}
	join := func(i, j int) { up[root(i)] = root(j) }
	byPath := make(map[string]int, len(cs))
	bySession := map[string]int{}
	for i, c := range cs {
		byPath[filepath.Clean(c.path)] = i
		if c.session == "" {
			continue
		}
		if j, ok := bySession[c.session]; ok {
			join(i, j)
		} else {
			bySession[c.session] = i
		}
	}
	for i, c := range cs {
		if c.parentSession == "" {
			continue
		}
		if j, ok := parentFile(byPath, c.parentSession); ok {
			join(i, j)
		}
	}
	sizes := map[int]int64{}
	for i, c := range cs {
		sizes[root(i)] += c.size
	}
	comps := slices.Collect(maps.Keys(sizes))
	// The largest first, each to the lightest group.
	slices.SortFunc(comps, func(a, b int) int { return cmp.Or(cmp.Compare(sizes[b], sizes[a]), cmp.Compare(a, b)) })
	load := make([]int64, max(n, 1))
	group := make(map[int]int, len(comps))
	for _, r := range comps {
		g := slices.Index(load, slices.Min(load))
		group[r] = g
		load[g] += sizes[r]
	}
	out := make(map[string]int, len(cs))
	for i, c := range cs {
		out[c.path] = group[root(i)]
	}
	return out
}
