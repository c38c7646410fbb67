//go:build unix && !linux

package proc

import "syscall"

// Group puts a process a test starts in a process group of its own. Only
// Linux can also kill it when the test binary dies; elsewhere the test's
// cleanups stop it.
func Group() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
