//go:build unix

package toolctx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// makeFifo creates a fifo (0600) at path, in place of whatever a process
// of ours left there; the directory is private.
func makeFifo(path string) error {
	if err := syscall.Mkfifo(path, 0o600); err == nil || !errors.Is(err, syscall.EEXIST) {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return syscall.Mkfifo(path, 0o600)
}

// openFifo opens the fifo at path read-write, which never blocks, without
// following a link, and checks that it is ours.
func openFifo(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 || !ownedByUs(fi) {
		f.Close()
		return nil, fmt.Errorf("%s: %w: not our fifo", path, ErrNotPrivate)
	}
	return f, nil
}

// lock takes f's lock without waiting: errBusy if another holds it.
func lock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errBusy
	}
	return err
}

// openLock opens (creating it 0600 if need be) the lock file at path
// without following a link, checks that it is our regular file, and takes
// its lock.
func openLock(path string, create bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NOFOLLOW
	if create {
		flags = os.O_RDWR | os.O_CREATE | syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || !ownedByUs(fi) {
		f.Close()
		return nil, fmt.Errorf("%s: %w: not our file", path, ErrNotPrivate)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// createLocked creates dir/name already locked: it is made under a
// temporary name, locked, then renamed, so that no other process finds
// it unlocked.
func createLocked(dir, name string) (*os.File, error) {
	f, err := os.CreateTemp(dir, "t.")
	if err != nil {
		return nil, err
	}
	err = lock(f)
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		f.Close()
		_ = os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// writeNow writes b to the fifo f once, without waiting for room.
func writeNow(f *os.File, b []byte) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Write(func(fd uintptr) bool {
			_, _ = syscall.Write(int(fd), b)
			return true
		})
	}
}
