//go:build unix

package toolctx

import (
	"os"
	"syscall"
)

func ownedByUs(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }

// alive says whether process pid still exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
