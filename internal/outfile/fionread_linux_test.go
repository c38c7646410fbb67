package outfile

import "golang.org/x/sys/unix"

// fionread asks how many bytes a pipe holds; Linux names it TIOCINQ.
const fionread = unix.TIOCINQ
