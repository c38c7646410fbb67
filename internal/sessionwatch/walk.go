package sessionwatch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// walkTree walks root as filepath.WalkDir does, with three differences
// that matter for session folders:
//
//   - Symlinks to directories are followed, the root's too: ~/.pi/agent/sessions,
//     a --session-dir or a project folder is often a link to a disk with room.
//   - fn sees real paths, symlinks resolved, so that inotify watches sit on
//     the real directories and the events they give name the paths fn saw.
//   - Each real directory (device and inode) is walked once, so a link
//     back to an ancestor, or two links to one folder, cost one walk.
//
// Errors reach fn without the PathError wrapping, since fn names the path
// itself: "permission denied", not "open DIR: permission denied". A root
// that cannot be resolved is reported under the name it was given.
func walkTree(root string, fn fs.WalkDirFunc) error {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return skipAll(fn(root, nil, bare(err)))
	}
	st, err := os.Stat(real)
	if err != nil {
		return skipAll(fn(root, nil, bare(err)))
	}
	w := &walker{fn: fn, visited: map[fileID]bool{}}
	return skipAll(w.visit(real, fs.FileInfoToDirEntry(st)))
}

type walker struct {
	fn      fs.WalkDirFunc
	visited map[fileID]bool
}

// visit calls fn for path, and for a directory reads it first, so that an
// unreadable one is reported as such rather than as a watch that failed;
// then reads it again for its entries, so that one created before fn
// placed its watch is seen now rather than at the next full scan.
func (w *walker) visit(path string, d fs.DirEntry) error {
	if !d.IsDir() {
		return w.fn(path, d, nil)
	}
	if info, err := d.Info(); err == nil {
		if key := identity(info); key != (fileID{}) {
			if w.visited[key] {
				return nil // reached again through a link
			}
			w.visited[key] = true
		}
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		if err := w.fn(path, d, bare(err)); err != nil && err != filepath.SkipDir {
			return err
		}
		return nil
	}
	if err := w.fn(path, d, nil); err != nil {
		if err == filepath.SkipDir {
			return nil
		}
		return err
	}
	if again, err := os.ReadDir(path); err == nil {
		ents = again
	}
	for _, e := range ents {
		p := filepath.Join(path, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				real, err := filepath.EvalSymlinks(p)
				if err != nil {
					continue // changed under us; the next scan sees it
				}
				if err := w.visit(real, fs.FileInfoToDirEntry(st)); err != nil {
					return err
				}
				continue
			}
			// A link to a file, or a dangling one: fn sees the link.
		}
		if err := w.visit(p, e); err != nil {
			if err == filepath.SkipDir && !e.IsDir() {
				return nil // as WalkDir: skip the rest of this directory
			}
			return err
		}
	}
	return nil
}

// skipAll turns the stop request into the end of the walk.
func skipAll(err error) error {
	if err == filepath.SkipAll || err == filepath.SkipDir {
		return nil
	}
	return err
}

// bare strips the path from a *PathError.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// watch places an inotify watch on the directory p, once. A directory
// moved within the tree keeps its inotify watch, which fsnotify knows by
// the old name: adding p would only hand that watch back, under the old
// name, and fsnotify drops it when it reads the move (IN_MOVE_SELF), or
// names the events of a moved subdirectory's files by their old paths.
// Either way growth under p would go unseen until the next full scan. So
// the old watch is removed first, and p gets a watch of its own.
func (f *Follower) watch(p string, d fs.DirEntry) {
	if f.watched[p] {
		return
	}
	if f.watcher == nil {
		f.watched[p] = true
		return
	}
	var id fileID
	if info, err := d.Info(); err == nil {
		id = identity(info)
	}
	if old, ok := f.watchedAs[id]; ok && old != p && id != (fileID{}) {
		st, err := os.Stat(old)
		switch {
		case err == nil && identity(st) == id:
			// A second name of a watched directory (a bind mount): its
			// events keep the first name, whose files are the followed ones.
		case err == nil && f.watchedAs[identity(st)] == old:
			// The old name holds another watched directory now: fsnotify
			// gave the old name to its watch and forgot this one's.
		default:
			_ = f.watcher.Remove(old) // gone already if fsnotify read the move
			delete(f.watched, old)
		}
	}
	if err := f.watcher.Add(p); err != nil {
		// Out of inotify watches, most likely: scan instead.
		f.logOnce("watch", "cannot watch %s (%v); session directories are scanned every 2s instead", p, err)
		f.degraded = true
		return
	}
	f.watched[p] = true
	if id != (fileID{}) {
		f.watchedAs[id] = p
	}
}

// forgetWatch forgets the watch of the directory removed at name:
// inotify removed it with the directory.
func (f *Follower) forgetWatch(name string) {
	for id, p := range f.watchedAs {
		if p == name {
			delete(f.watchedAs, id)
		}
	}
}

// unwatchBelow forgets the watches of the directories below a directory
// whose name went away. Removed, inotify dropped them; moved, they went
// with it, and fsnotify drops only the moved directory's own watch: one
// moved out of the tree would be watched for good, and its old names
// would stay taken, so that a folder made again there went unwatched.
// Moved within the tree, the walk of its new name watches them again.
func (f *Follower) unwatchBelow(prefix string, moved bool) {
	for p := range f.watched {
		if !strings.HasPrefix(p, prefix) {
			continue
		}
		delete(f.watched, p)
		f.forgetWatch(p)
		if moved && f.watcher != nil {
			_ = f.watcher.Remove(p)
		}
	}
}

// rootWatched reports whether root, symlinks resolved, is watched.
func (f *Follower) rootWatched(root string) bool {
	if f.watched[filepath.Clean(root)] {
		return true
	}
	real, err := filepath.EvalSymlinks(root)
	return err == nil && f.watched[real]
}

// sayRoot says once, after the first scan, why a root gave no session
// file: it does not exist yet (it is looked for), or it holds none. A root
// that could not be read was named by the walk already.
func (f *Follower) sayRoot(root string, found int) {
	if found > 0 {
		return
	}
	st, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := os.Lstat(root); lerr == nil {
			f.logOnce("root "+root, "%s is a symlink to a folder that does not exist; watching for it to be created (checked every 2s)", root)
			return
		}
		f.logOnce("root "+root, "%s does not exist yet; watching for it to be created (checked every 2s)", root)
	case err != nil:
		// Named by the walk.
	case !st.IsDir():
		f.logOnce("root "+root, "%s is not a folder: nothing to follow in it", root)
	case f.said["dir "+root] || f.saidReal(root):
		// Unreadable: named by the walk.
	default:
		f.logOnce("root "+root, "no session file in %s yet; new ones will be followed", root)
	}
}

// saidReal reports whether the walk named root's real directory.
func (f *Follower) saidReal(root string) bool {
	real, err := filepath.EvalSymlinks(root)
	return err == nil && f.said["dir "+real]
}
