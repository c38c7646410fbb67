// Package toolctx hands each bash call Pi starts the trace context of the
// tool call that started it. pi-otel publishes, per bash call, a small file
// holding only a TRACEPARENT and a TRACESTATE, in a directory only its user
// can read; a BASH_ENV hook (hook.bash) finds its call's file from the
// command bash runs, and exports the two variables before the command
// starts. See docs/configuration.md, Propagation.
package toolctx

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// BaseDir is where the private directory goes when none is configured:
// $XDG_RUNTIME_DIR/pi-otel, which is the user's own, else pi-otel-UID in
// the temporary directory. The hook works out the same path.
func BaseDir(getenv func(string) string) string {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "pi-otel")
	}
	tmp := cmp.Or(getenv("TMPDIR"), "/tmp")
	return filepath.Join(tmp, "pi-otel-"+strconv.Itoa(os.Getuid()))
}

// ErrNotPrivate is returned for a directory that someone else could read
// or write: another user's files there could hand a bash call a trace
// context of their choosing, or learn ours.
var ErrNotPrivate = errors.New("not private")

// privateDir creates dir (0700) if needed and checks that it is a real
// directory, owned by us, that no one else may use.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s: %w: not a directory", dir, ErrNotPrivate)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: %w: mode %#o, want 0700", dir, ErrNotPrivate, fi.Mode().Perm())
	}
	if !ownedByUs(fi) {
		return fmt.Errorf("%s: %w: owned by another user", dir, ErrNotPrivate)
	}
	return nil
}
