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

// stateVersion changes when the state file's meaning does.
const stateVersion = 1

// State is where a follower stands in every file: what is persisted
// between runs of pi-otel watch.
type State struct {
	Version int                  `json:"version"`
	Files   map[string]FileState `json:"files"`
}

// FileState is one file's place.
type FileState struct {
	// Dev and Ino tell a file replaced under the same name.
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
	// Committed is the offset past the last run whose spans the exporter
	// accepted; runs begun before it are never traced again.
	Committed int64 `json:"committed"`
	// At is when Committed last moved (Unix seconds): a file rewritten in
	// place is traced again only from runs begun after it.
	At int64 `json:"at,omitempty"`
}

// LoadState reads a state file. A missing file is an empty state and
// first reports true.
func LoadState(path string) (st State, first bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{Version: stateVersion, Files: map[string]FileState{}}, true, nil
	}
	if err != nil {
		return State{}, false, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, false, fmt.Errorf("state file %s is damaged (%v); move it away to start over", path, err)
	}
	if st.Version != stateVersion {
		return State{}, false, fmt.Errorf("state file %s has version %d; this pi-otel reads version %d", path, st.Version, stateVersion)
	}
	if st.Files == nil {
		st.Files = map[string]FileState{}
	}
	return st, false, nil
}

// Save writes the state atomically: a temporary file in the same
// directory, synced, renamed over the old one, and the directory synced,
// so a crash leaves either the old state or the new, never a mix. The file
// and a directory it creates are private to the user (0600, 0700): paths
// name the user's projects.
func (st State) Save(path string) error {
	st.Version = stateVersion
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
