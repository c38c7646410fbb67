//go:build unix

package toolctx

import (
	"context"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Stream reads Pi's stdout pipe for the mapper and syncs the hooks'
// questions with it (Sync): a question waits until every byte that Pi
// had written when it was asked (those read so far, and those still in
// the pipe then, FIONREAD) has gone through the mapper. The mapper has
// taken a chunk once its reader asks for the next one. Pi writes an
// assistant message before it starts that message's bash calls, so the
// answer is exact.
type Stream struct {
	f  *os.File
	rc syscall.RawConn

	mu sync.Mutex
	// read is what left the pipe; mapped, what the mapper has taken.
	read, mapped int64
	ended        bool
	changed      chan struct{}
}

// NewStream reads pipe, which must be in non-blocking mode (os.Pipe).
func NewStream(pipe *os.File) (*Stream, error) {
	rc, err := pipe.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &Stream{f: pipe, rc: rc, changed: make(chan struct{})}, nil
}

// changedLocked wakes the questions waiting; s.mu is held.
func (s *Stream) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Read reads the pipe; a read and its count are one step under s.mu, so
// that Sync sees each byte either read or in the pipe.
func (s *Stream) Read(p []byte) (int, error) {
	s.mu.Lock()
	s.mapped = s.read
	s.changedLocked()
	s.mu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	cerr := s.rc.Read(func(fd uintptr) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for {
			n, err = syscall.Read(int(fd), p)
			if err != syscall.EINTR {
				break
			}
		}
		if n > 0 {
			s.read += int64(n)
		}
		return err != syscall.EAGAIN
	})
	if cerr == nil && err != nil {
		cerr = &os.PathError{Op: "read", Path: s.f.Name(), Err: err}
	}
	if cerr == nil && n <= 0 {
		n, cerr = 0, io.EOF
	}
	if cerr != nil {
		s.mu.Lock()
		s.ended = true
		s.changedLocked()
		s.mu.Unlock()
		return max(n, 0), cerr
	}
	return n, nil
}

// Sync returns once the mapper has taken what Pi wrote before now, or
// the stream ended, or ctx did.
func (s *Stream) Sync(ctx context.Context, _ Question) {
	s.mu.Lock()
	unread := 0
	_ = s.rc.Control(func(fd uintptr) {
		unread, _ = unix.IoctlGetInt(int(fd), fionread)
	})
	target := s.read + int64(unread)
	for s.mapped < target && !s.ended {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
	}
	s.mu.Unlock()
}
