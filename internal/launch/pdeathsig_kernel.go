//go:build linux || freebsd

package launch

import "syscall"

// ParentDeathSignalSupported reports whether the kernel can signal the child
// when pi-otel dies.
const ParentDeathSignalSupported = true

// Linux ties the parent-death signal to the forking thread (see run);
// FreeBSD's procctl(PROC_PDEATHSIG_CTL) follows the parent process.
func sysProcAttr(parentDeath syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: parentDeath}
}
