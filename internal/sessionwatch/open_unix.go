//go:build unix

package sessionwatch

import (
	"io/fs"
	"os"
	"syscall"
)

// openFile opens path for reading, as os.Open does but without its try
// at the runtime's poller: a regular file, which is all the follower
// reads, is refused it, at the cost of an epoll_ctl and four fcntl on
// each of the several opens a file gets.
func openFile(path string) (*os.File, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == nil {
			return os.NewFile(uintptr(fd), path), nil
		}
		if err != syscall.EINTR {
			return nil, &fs.PathError{Op: "open", Path: path, Err: err}
		}
	}
}
