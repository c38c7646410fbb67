//go:build linux

package toolctx

import "golang.org/x/sys/unix"

// fionread asks how many bytes a pipe holds.
const fionread = unix.TIOCINQ
