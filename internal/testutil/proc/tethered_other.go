//go:build unix && !linux

package proc

import "syscall"

// Tethered is the SysProcAttr of a test's child process: its own process
// group, so the test can signal all of it. Only Linux can also have the
// child killed when the test binary dies, so elsewhere a test binary killed
// without its cleanups may leave it running.
func Tethered() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
