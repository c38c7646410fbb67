package sessionwatch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Lock is the lock file next to a state file, held while one watcher
// follows that state: two watchers on one state would trace every run
// twice. The lock is the kernel's (flock), so it goes with the process,
// also after kill -9; the file itself stays, holding the last holder's pid.
type Lock struct {
	f    *os.File
	path string
}

// ErrLocked is returned, wrapped in a LockedError, when another process
// holds the lock.
var ErrLocked = errors.New("locked")

// LockedError names the lock and the process holding it.
type LockedError struct {
	Path string
	PID  int // 0 when the file names none
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("%s holds %s", who, e.Path)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// AcquireLock takes the lock of statePath, the file statePath+".lock".
// Held by another process, it returns a *LockedError at once, or, with
// wait, calls waiting once with that error and tries again every poll
// until it gets the lock or ctx ends.
func AcquireLock(ctx context.Context, statePath string, wait bool, poll time.Duration, waiting func(*LockedError)) (*Lock, error) {
	path := statePath + ".lock"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	said := false
	for {
		err := tryLock(f)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrLocked) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		le := &LockedError{Path: path, PID: holder(path)}
		if !wait {
			f.Close()
			return nil, le
		}
		if !said && waiting != nil {
			waiting(le)
			said = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(poll):
		}
	}
	// Name the holder for the next one to come; the lock, not this text,
	// is what excludes.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f, path: path}, nil
}

// Release gives the lock up. The file stays: removing it would let a
// waiter lock a file that a third process no longer sees.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases flock
	l.f = nil
	return err
}

// holder is the pid written in a lock file, or 0.
func holder(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
