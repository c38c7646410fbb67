package proc

import "syscall"

// Group puts a process a test starts in a process group of its own, and has
// the kernel kill it with SIGKILL when the test binary dies without running
// its cleanups (a panic or a -timeout), so none outlives the test.
func Group() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
