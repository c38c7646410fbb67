package sessionwatch

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// PiDirs says where Pi keeps its files, resolved as Pi 1.x resolves them.
// Getenv and Home are injected so tests need no globals.
type PiDirs struct {
	Getenv func(string) string
	Home   string
	// Cwd is the working directory relative paths resolve from (Pi's own
	// cwd; for watch, pi-otel's).
	Cwd string
	// Project makes Cwd's .pi/settings.json count, as it does for a Pi
	// started there (pi-otel run); watch follows no one project.
	Project bool
}

// AgentDir is PI_CODING_AGENT_DIR with "~" expanded, else ~/.pi/agent.
func (d PiDirs) AgentDir() string {
	if v := d.Getenv("PI_CODING_AGENT_DIR"); v != "" {
		return d.Abs(v)
	}
	return filepath.Join(d.Home, ".pi", "agent")
}

// SessionRoot is the directory that holds Pi's sessions when no
// --session-dir is given: PI_CODING_AGENT_SESSION_DIR, then the sessionDir
// setting of the project's .pi/settings.json, then the user's
// settings.json, then <agent dir>/sessions. custom reports whether it came
// from a variable or a setting; then Pi puts every session file directly
// in it, else in one folder per working directory.
func (d PiDirs) SessionRoot() (dir string, custom bool, err error) {
	if v := d.Getenv("PI_CODING_AGENT_SESSION_DIR"); v != "" {
		return d.Abs(v), true, nil
	}
	var settingsErr error
	files := []string{filepath.Join(d.AgentDir(), "settings.json")}
	if d.Project { // Pi reads it before project trust is settled
		files = append([]string{filepath.Join(d.Cwd, ".pi", "settings.json")}, files...)
	}
	for _, f := range files {
		v, err := sessionDirSetting(f)
		if err != nil {
			settingsErr = errors.Join(settingsErr, err)
			continue
		}
		if v != "" {
			return d.Abs(v), true, nil
		}
	}
	return filepath.Join(d.AgentDir(), "sessions"), false, settingsErr
}

// DefaultRoots are the folders read when none are given: Pi's session
// root first (SessionRoot, there or not), then oh-my-pi's (Pi's fork:
// ~/.omp/agent/sessions, none without a home) when it is a folder and not
// the same one. err is SessionRoot's.
func (d PiDirs) DefaultRoots() ([]string, error) {
	root, _, err := d.SessionRoot()
	roots := []string{root}
	if omp := filepath.Join(d.Home, ".omp", "agent", "sessions"); d.Home != "" && omp != root {
		if st, serr := os.Stat(omp); serr == nil && st.IsDir() {
			roots = append(roots, omp)
		}
	}
	return roots, err
}

// ProjectDir is the folder Pi uses for sessions started in cwd under the
// default root: "--" + cwd with separators and colons as "-" + "--".
func ProjectDir(root, cwd string) string {
	c := strings.TrimLeft(filepath.Clean(cwd), `/\`)
	c = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(c)
	return filepath.Join(root, "--"+c+"--")
}

func sessionDirSetting(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var s struct {
		SessionDir string `json:"sessionDir"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		// Pi reports a broken settings file and carries on with defaults.
		return "", errors.New(path + ": not valid JSON, its sessionDir is ignored")
	}
	return s.SessionDir, nil
}

// Abs expands "~" and resolves a relative path against Cwd, as Pi's
// normalizePath and resolvePath do.
func (d PiDirs) Abs(p string) string {
	switch {
	case p == "~":
		p = d.Home
	case strings.HasPrefix(p, "~/"):
		p = filepath.Join(d.Home, p[2:])
	case strings.HasPrefix(p, "file://"):
		p = strings.TrimPrefix(p, "file://")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(d.Cwd, p)
	}
	return filepath.Clean(p)
}
