package sessionwatch

import (
	"cmp"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Parts is a history split by Partition.
type Parts struct {
	files map[string]part // by the path a Follower's walk gives
	byID  map[fileID]part // the same, by identity
}

// part is what Partition saw of a file: its group, and what a first scan
// orders it by (bySession), so that the follower of its group need not
// look again.
type part struct {
	group                  int
	session, parentSession string
	size                   int64
	id                     fileID
}

// Share is group i, for Config.Share.
func (p *Parts) Share(i int) *Share { return &Share{parts: p, group: i} }

// Share is one group of Parts: the files one Follower reads.
type Share struct {
	parts *Parts
	group int
}

// The methods take a nil Share: a follower that reads every file.

// seen is what Partition saw of path, if it saw it.
func (s *Share) seen(path string) (part, bool) {
	if s == nil {
		return part{}, false
	}
	pt, ok := s.parts.files[path]
	return pt, ok
}

// other reports whether a file Partition saw at path is another share's,
// by its path alone: the first scan passes over it before it stats it.
func (s *Share) other(path string) bool {
	pt, ok := s.seen(path)
	return ok && pt.group != s.group
}

// otherFile reports whether the file at path, of identity id, is another
// share's. The file Partition saw there is that path's share's; a file
// it saw under another name (moved or renamed since, over another file
// maybe), the same by identity and by its header, that name's; a new
// file, the path's, or group 0's at a path it did not see.
func (s *Share) otherFile(path string, id fileID) bool {
	if s == nil {
		return false
	}
	pt, seen := s.parts.files[path]
	if seen && pt.id == id {
		return pt.group != s.group
	}
	g := pt.group // 0 if not seen
	if o, ok := s.parts.byID[id]; ok && headerSession(path) == o.session {
		g = o.group
	}
	return g != s.group
}

// Partition splits the session files under roots into at most n groups
// that can be read apart, each by a Follower of its own that reads only
// its group (Config.Share), for a history read on several cores. What
// one Follower must see together is in one group: the files of one
// session (copies, a second name), which its ledger counts once, and a
// child session or a fork with the file its header names
// (parentSession), whose trace notes the child's tool. Groups are
// balanced by size.
func Partition(roots []string, n int) *Parts {
	type cand struct {
		path string
		part
	}
	var cs []cand
	lr := headerReader()
	for _, r := range roots {
		_ = walkTree(filepath.Clean(r), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !d.Type().IsRegular() || !strings.HasSuffix(p, ".jsonl") {
				return nil
			}
			c := cand{path: p}
			if info, err := d.Info(); err == nil {
				c.size, c.id = info.Size(), identity(info)
			}
			h, _ := readHeaderWith(p, lr)
			c.session, c.parentSession = h.ID, h.ParentSession
			cs = append(cs, c)
			return nil
		})
	}
	// Union-find over the files: joined by a shared session id, by a
	// header's parentSession, and by identity (two names of one file,
	// which a follower reads once: under the name it comes to first).
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
	byID := make(map[fileID]int, len(cs))
	for i, c := range cs {
		byPath[filepath.Clean(c.path)] = i
		if c.id != (fileID{}) {
			if j, ok := byID[c.id]; ok {
				join(i, j)
			} else {
				byID[c.id] = i
			}
		}
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
	out := &Parts{files: make(map[string]part, len(cs)), byID: make(map[fileID]part, len(cs))}
	for i, c := range cs {
		c.group = group[root(i)]
		out.files[c.path] = c.part
		if c.id != (fileID{}) {
			out.byID[c.id] = c.part
		}
	}
	return out
}
