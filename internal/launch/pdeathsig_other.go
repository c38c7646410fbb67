//go:build unix && !linux && !freebsd

package launch

import "syscall"

// ParentDeathSignalSupported reports whether the kernel can signal the child
// when pi-otel dies.
const ParentDeathSignalSupported = false

// No kernel support (macOS, OpenBSD, NetBSD, ...): a child outliving
// pi-otel runs on until it notices its stdout pipe has no reader.
func sysProcAttr(syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{}
}
