package launch

import "syscall"

// ParentDeathSignalSupported reports whether the kernel can signal the child
// when pi-otel dies.
const ParentDeathSignalSupported = true

// FreeBSD's procctl(PROC_PDEATHSIG_CTL) follows the parent process, not a
// thread.
func sysProcAttr(parentDeath syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: parentDeath}
}
