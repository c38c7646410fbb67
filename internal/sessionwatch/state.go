package sessionwatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pi-otel/pi-otel/internal/ledger"
)

// stateVersion changes when the state file's meaning does. Version 1 keyed
// files by path, version 2 by identity, both with offsets alone deciding
// what was traced; they are read and written back as version 3.
const stateVersion = 3

// State is what a follower keeps between runs of pi-otel watch.
//
// What was traced is recorded per session (Sessions): a session is its
// header's id, and each of its runs is known by keys (package ledger), so a
// run is traced once whichever file holds it, and whatever happened to the
// files. The files' places (Files) only say where to go on reading, so
// that a restart does not read every file again; they never decide
// whether a run was traced. Children only spare reads of parents' files.
type State struct {
	Version int `json:"version"`
	// Scan is set while the first start's scan is not complete: a restart
	// goes on with it, with the same Since, instead of taking the files
	// not yet seen for new ones.
	Scan *ScanState `json:"scan,omitempty"`
	// Sessions are the runs traced, per session.
	Sessions []ledger.Session `json:"sessions,omitempty"`
	// Files are the places, one per file.
	Files []FileState `json:"files"`
	// Children are the tool spans that ran child sessions, as the
	// parents' traces noted them, newest last (see links.go). Added in
	// version 3 without a new version: a pi-otel that does not know them
	// loads the state and drops them, which costs only reads.
	Children []ChildState `json:"children,omitempty"`

	// legacy: a version 1 or 2 state, whose places are all it knows of
	// what was traced.
	legacy    bool
	byID      map[fileID]int
	bySession map[string]int
}

// ScanState is the first start's scan in progress.
type ScanState struct {
	// Since is the first start's history bound, in Unix nanoseconds: runs
	// of the sessions on disk then that began before it are not traced
	// (1: none).
	Since int64 `json:"since"`
}

// FileState is one file's place.
type FileState struct {
	// Session is the session id of the file's header ("" if it has none).
	Session string `json:"session,omitempty"`
	// Dev and Ino are the file's identity while it stays on one file
	// system, whatever its name.
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
	// Path is where the file was last seen, for people reading the state.
	Path string `json:"path,omitempty"`
	// Committed is the offset past the last run whose spans the exporter
	// accepted: reading goes on from there.
	Committed int64 `json:"committed"`
	// Tail is a checksum of the bytes just before Committed: a place is
	// used only for a file with the same bytes there (the same file, or a
	// copy), never for a rewrite.
	Tail uint32 `json:"tail,omitempty"`
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
		st.Version, st.legacy = stateVersion, true
		for p, fs := range old.Files {
			fs.Path = p
			st.Files = append(st.Files, fs)
		}
	case 2, stateVersion:
		if err := json.Unmarshal(b, &st); err != nil {
			return State{}, false, fmt.Errorf("state file %s is damaged (%v); move it away to start over", path, err)
		}
		st.Version, st.legacy = stateVersion, v.Version == 2
	default:
		return State{}, false, fmt.Errorf("state file %s has version %d; this pi-otel reads versions 1 to %d", path, v.Version, stateVersion)
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

// resume is the place to go on reading a file from: the record of this
// very file (its identity), else of a file of the same session (a copy, a
// move to another file system). The caller checks the bytes (Tail).
func (st *State) resume(id fileID, session string) (FileState, bool) {
	if i, ok := st.byID[id]; ok {
		if f := st.Files[i]; f.Session == session || (st.legacy && f.Session == "") {
			return f, true
		}
	}
	if i, ok := st.bySession[session]; ok && session != "" {
		return st.Files[i], true
	}
	return FileState{}, false
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
