//go:build unix

package app

import (
	"os"

	"golang.org/x/sys/unix"
)

// windowWidth is the columns of the terminal f, 0 if it cannot tell.
func windowWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
