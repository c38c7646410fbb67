package sessionwatch

import (
	"bytes"
	"cmp"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// Owner decides which session files one Pi process writes, for
// pi-otel run in front of Pi's terminal UI. Pi opens a session file only
// for the moment of each append, and nothing in a file names the process
// that wrote it, so ownership is inferred, never guessed:
//
//  1. A file pinned at launch is this Pi's: the --session-id pi-otel
//     passed or the user gave, the --session file, the file --continue
//     picks.
//  2. A fork or clone whose header's parentSession is one of this Pi's
//     files is this Pi's.
//  3. A file this Pi (or a process below it) holds open when it is looked
//     at is this Pi's.
//  4. Any other file that starts growing while this Pi runs is this Pi's
//     only if no other Pi process could be writing to the same directory
//     (same working directory, or any Pi when the directory is a custom
//     one). Otherwise it is left alone and counted in Ambiguous.
//
// Rule 4 is the limit: a /new or /resume in this Pi while another Pi runs
// in the same folder is not traced, rather than risk tracing the other's.
type Owner struct {
	// PID is the Pi process.
	PID int
	// Dir is the session directory followed; Custom says it is not the
	// per-folder default, so any Pi might share it.
	Dir    string
	Custom bool
	// Cwd is Pi's working directory.
	Cwd string
	// IDs and Paths pin files known to be this Pi's (rule 1). An id may be
	// a prefix, as --session accepts.
	IDs   []string
	Paths []string
	// Proc is the /proc directory (tests use a fake one).
	Proc string

	mu        sync.Mutex
	mine      map[string]bool
	ambiguous []string
}

// SetPID names the Pi process once it runs.
func (o *Owner) SetPID(pid int) {
	o.mu.Lock()
	o.PID = pid
	o.mu.Unlock()
}

// Accept implements Config.Accept. Until the Pi process is known, nothing
// is decided.
func (o *Owner) Accept(path string) (ok, decided bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.PID <= 0 {
		return false, false
	}
	if o.mine == nil {
		o.mine = map[string]bool{}
	}
	// Pi holds a file open only while it writes: look first, while it
	// may still be writing.
	if o.fdOpen(o.PID, path) {
		o.mine[filepath.Clean(path)] = true
		return true, true
	}
	h, complete := readHeader(path)
	if !complete {
		return false, false
	}
	if o.pinned(path, h.ID) || (h.ParentSession != "" && o.mine[realPath(h.ParentSession)]) ||
		o.holdsOpen(path) || len(o.others()) == 0 {
		o.mine[filepath.Clean(path)] = true
		return true, true
	}
	o.ambiguous = append(o.ambiguous, path)
	return false, true
}

// realPath is p with symlinks resolved, as the follower names files (a
// session folder may be a link); p cleaned if it cannot be resolved.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// Ambiguous lists the files left alone by rule 4.
func (o *Owner) Ambiguous() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.ambiguous...)
}

func (o *Owner) pinned(path, id string) bool {
	for _, p := range o.Paths {
		if filepath.Clean(p) == filepath.Clean(path) || realPath(p) == filepath.Clean(path) {
			return true
		}
	}
	for _, want := range o.IDs {
		if want != "" && id != "" && strings.HasPrefix(id, want) {
			return true
		}
	}
	return false
}

// readHeader reads a file's first line; complete is false until its LF.
// Its fields are read whatever the line is (an entry's id in a file
// without a header), but for a line that is not JSON: a damaged header
// pins nothing.
func readHeader(path string) (event.Header, bool) {
	return readHeaderWith(path, headerReader())
}

// headerReader is a line reader for headers, one after the other.
func headerReader() *framing.Reader {
	return framing.NewReaderAt(nil, 0, framing.WithReadSize(4096), framing.WithRetain(1<<20))
}

// readHeaderWith is readHeader reading with lr, from headerReader.
func readHeaderWith(path string, lr *framing.Reader) (event.Header, bool) {
	fh, err := openFile(path)
	if err != nil {
		return event.Header{}, false
	}
	defer fh.Close()
	lr.ResetAt(fh, 0)
	first, ok := firstLine(lr)
	if !ok {
		return event.Header{}, false
	}
	if h := event.ReadHeader(first); h.Valid {
		return h, true
	}
	return event.Header{}, true
}

func (o *Owner) proc() string { return cmp.Or(o.Proc, "/proc") }

// holdsOpen reports whether this Pi or a process below it has path open.
func (o *Owner) holdsOpen(path string) bool {
	for pid := range o.tree() {
		if o.fdOpen(pid, path) {
			return true
		}
	}
	return false
}

// fdOpen reports whether process pid has path open.
func (o *Owner) fdOpen(pid int, path string) bool {
	dir := filepath.Join(o.proc(), strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if t, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && t == path {
			return true
		}
	}
	return false
}

// tree is the Pi process and every process below it.
func (o *Owner) tree() map[int]bool {
	parents := map[int]int{}
	ents, _ := os.ReadDir(o.proc())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := o.ppid(pid); ok {
			parents[pid] = pp
		}
	}
	tree := map[int]bool{o.PID: true}
	for changed := true; changed; {
		changed = false
		for pid, pp := range parents {
			if tree[pp] && !tree[pid] {
				tree[pid], changed = true, true
			}
		}
	}
	return tree
}

func (o *Owner) ppid(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join(o.proc(), strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// others lists the other Pi processes that may write to Dir.
func (o *Owner) others() []int {
	tree := o.tree()
	self := os.Getpid()
	dirOwner, shared := o.dirOwner()
	var out []int
	ents, _ := os.ReadDir(o.proc())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || tree[pid] || pid == self {
			continue
		}
		base := filepath.Join(o.proc(), e.Name())
		// The working directory is read before the command line: an
		// exiting process lets go of its memory, which holds its command
		// line, before its working directory, so a Pi that exits between
		// the two reads is seen as gone, not as a Pi in an unknown folder.
		cwd, cwdErr := os.Readlink(filepath.Join(base, "cwd"))
		b, err := os.ReadFile(filepath.Join(base, "cmdline"))
		if err != nil || !IsPiCommand(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")) {
			continue
		}
		if !shared {
			if uid, ok := fsUID(base); ok && uid != 0 && uid != dirOwner {
				continue // another user's Pi, which cannot write in Dir
			}
		}
		// An unreadable folder counts as a conflict: better miss a run
		// than trace another's.
		if o.Custom || cwdErr != nil || filepath.Clean(cwd) == filepath.Clean(o.Cwd) {
			out = append(out, pid)
		}
	}
	return out
}

// dirOwner is the user who owns Dir; shared says users other than that
// one may write in it (its group or all may, or it cannot be read).
func (o *Owner) dirOwner() (uid uint32, shared bool) {
	st, err := os.Stat(o.Dir)
	if err != nil {
		return 0, true
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, true
	}
	return s.Uid, st.Mode().Perm()&0o022 != 0
}

// fsUID is the user a process writes files as: the fourth of the Uid
// line of its status in /proc.
func fsUID(base string) (uint32, bool) {
	b, err := os.ReadFile(filepath.Join(base, "status"))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			if f := strings.Fields(rest); len(f) == 4 {
				uid, err := strconv.ParseUint(f[3], 10, 32)
				return uint32(uid), err == nil
			}
		}
	}
	return 0, false
}

// IsPiCommand reports whether a command line runs Pi: the pi command
// itself, or node (or bun) running Pi's CLI script.
func IsPiCommand(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	isPi := func(a string) bool {
		return filepath.Base(a) == "pi" || strings.Contains(a, "pi-coding-agent/dist/") || strings.Contains(a, "pi-coding-agent/bin/")
	}
	if isPi(argv[0]) {
		return true
	}
	switch strings.TrimSuffix(filepath.Base(argv[0]), ".exe") {
	case "node", "nodejs", "bun":
		return len(argv) > 1 && isPi(argv[1])
	}
	return false
}
