package proc

import "syscall"

// Tethered is the SysProcAttr of a test's child process: its own process
// group, so the test can signal all of it, and killed by the kernel when
// the test binary dies without running its cleanups (a panic, -timeout).
func Tethered() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
