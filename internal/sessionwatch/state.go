package sessionwatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// stateVersion changes when the state file's meaning does. Version 1 keyed
// files by path; it is read and written back as version 2.
const stateVersion = 2

// State is where a follower stands in every file: what is persisted
// between runs of pi-otel watch.
//
// A file is known by what it is, not by its name: its device and inode,
// and the session id of its header. A file renamed or moved (into an
// archive/ folder, say) keeps its place, so nothing is traced twice.
type State struct {
	Version int `json:"version"`
	// Scan is set while the first start's scan is not complete: a restart
	// goes on with it, with the same Since, instead of taking the files
	// not yet seen for new ones.
	Scan *ScanState `json:"scan,omitempty"`
	// Files are the places, one per file.
	Files []FileState `json:"files"`

	byID      map[fileID]int
	bySession map[string]int
}

// ScanState is the first start's scan in progress.
type ScanState struct {
	// Since is Config.Since of that start, in Unix nanoseconds; 0 is none
	// (history skipped).
	Since int64 `json:"since"`
}

// FileState is one file's place.
type FileState struct {
	// Session is the session id of the file's header ("" if it has none):
	// it finds a file copied or moved to another file system, and tells a
	// new file that took a deleted one's inode.
	Session string `json:"session,omitempty"`
	// Dev and Ino are the file's identity while it stays on one file
	// system, whatever its name.
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
	// Path is where the file was last seen, for people reading the state.
	Path string `json:"path,omitempty"`
	// Committed is the offset past the last run whose spans the exporter
	// accepted; runs begun before it are never traced again.
	Committed int64 `json:"committed"`
	// Tail is a checksum of the bytes just before Committed: a file found
	// by its session id under another inode keeps its place only if they
	// are the same (a copy, not a rewrite).
	Tail uint32 `json:"tail,omitempty"`
	// At is when Committed last moved (Unix seconds): a file rewritten in
	// place is traced again only from runs begun after it.
	At int64 `json:"at,omitempty"`
}

// stateV1 is the version 1 layout, keyed by path.
type stateV1 struct {
	Files map[string]FileState `json:"files"`
}

// LoadState reads a state file. A missing file is an empty state and
// first reports true, as does a state whose first scan was cut short.
func LoadState(path string) (st State, first bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		st = State{Version: stateVersion}
		st.index()
		return st, true, nil
	}
	if err != nil {
		return State{}, false, err
	}
	var v struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return State{}, false, fmt.Errorf("state file %s is damaged (%v); move it away to start over", path, err)
	}
	switch v.Version {
	case 1:
		var old stateV1
		if err := json.Unmarshal(b, &old); err != nil {
			return State{}, false, fmt.Errorf("state file %s is damaged (%v); move it away to start over", path, err)
		}
		st.Version = stateVersion
		for p, fs := range old.Files {
			fs.Path = p
			st.Files = append(st.Files, fs)
		}
	case stateVersion:
		if err := json.Unmarshal(b, &st); err != nil {
			return State{}, false, fmt.Errorf("state file %s is damaged (%v); move it away to start over", path, err)
		}
	default:
		return State{}, false, fmt.Errorf("state file %s has version %d; this pi-otel reads versions 1 and %d", path, v.Version, stateVersion)
	}
	st.index()
	return st, st.Scan != nil, nil
}

// index builds the lookups by identity and by session id.
func (st *State) index() {
	st.byID = make(map[fileID]int, len(st.Files))
	st.bySession = map[string]int{}
	for i, f := range st.Files {
		st.byID[fileID{f.Dev, f.Ino}] = i
		if f.Session != "" {
			st.bySession[f.Session] = i
		}
	}
}

// byIdentity is the place of the file with this device and inode.
func (st *State) byIdentity(id fileID) (FileState, bool) {
	i, ok := st.byID[id]
	if !ok {
		return FileState{}, false
	}
	return st.Files[i], true
}

// bySessionID is the place of a file with this session id.
func (st *State) bySessionID(id string) (FileState, bool) {
	i, ok := st.bySession[id]
	if !ok || id == "" {
		return FileState{}, false
	}
	return st.Files[i], true
}

// File is the place of the file last seen at path, for tests and tools.
func (st State) File(path string) (FileState, bool) {
	for _, f := range st.Files {
		if f.Path == path {
			return f, true
		}
	}
	return FileState{}, false
}

// Save writes the state atomically: a temporary file in the same
// directory, synced, renamed over the old one, and the directory synced,
// so a crash leaves either the old state or the new, never a mix. The file
// and a directory it creates are private to the user (0600, 0700): paths
// name the user's projects.
func (st State) Save(path string) error {
	st.Version = stateVersion
	if st.Files == nil {
		st.Files = []FileState{}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// DefaultStatePath is $XDG_STATE_HOME/pi-otel/watch.json, else
// ~/.local/state/pi-otel/watch.json.
func DefaultStatePath(getenv func(string) string, home string) string {
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "pi-otel", "watch.json")
	}
	return filepath.Join(home, ".local", "state", "pi-otel", "watch.json")
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
