// Package follow reads a file that is still being written, like tail -F:
// at the end it waits for more, and it starts over when the file is
// truncated or replaced (log rotation).
package follow

import (
	"context"
	"io"
	"os"
	"time"
)

// Reader is an io.Reader over a growing file. It returns io.EOF only once
// its context is done.
type Reader struct {
	ctx  context.Context
	path string
	poll time.Duration
	f    *os.File
	off  int64
}

type config struct{ poll time.Duration }

// Option configures a Reader.
type Option interface {
	apply(config) config
}

type optionFunc func(config) config

func (f optionFunc) apply(c config) config { return f(c) }

// WithPoll sets how often the file is checked at its end (default 250ms).
// Values below 1 are ignored.
func WithPoll(d time.Duration) Option {
	return optionFunc(func(c config) config {
		if d > 0 {
			c.poll = d
		}
		return c
	})
}

// Open follows path until ctx is done. A file that does not exist yet is
// waited for, as tail -F does.
func Open(ctx context.Context, path string, opts ...Option) (*Reader, error) {
	c := config{poll: 250 * time.Millisecond}
	for _, o := range opts {
		c = o.apply(c)
	}
	r := &Reader{ctx: ctx, path: path, poll: c.poll}
	f, err := os.Open(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	r.f = f
	return r, nil
}

// Read reads what is there, or waits for more.
func (r *Reader) Read(p []byte) (int, error) {
	for {
		if r.f != nil {
			n, err := r.f.Read(p)
			r.off += int64(n)
			if n > 0 {
				return n, nil
			}
			if err != nil && err != io.EOF {
				return 0, err
			}
			if r.reopenIfMoved() {
				continue
			}
		} else if f, err := os.Open(r.path); err == nil {
			r.f, r.off = f, 0
			continue
		}
		select {
		case <-r.ctx.Done():
			return 0, io.EOF
		case <-time.After(r.poll):
		}
	}
}

// reopenIfMoved handles truncation and replacement at the end of the file.
func (r *Reader) reopenIfMoved() bool {
	cur, err := r.f.Stat()
	if err != nil {
		return false
	}
	if cur.Size() < r.off {
		// Truncated in place: read it again from the start.
		if _, err := r.f.Seek(0, io.SeekStart); err == nil {
			r.off = 0
			return true
		}
	}
	now, err := os.Stat(r.path)
	if err != nil || os.SameFile(cur, now) {
		return false
	}
	// Replaced (rotated): finish the old file first, then switch.
	f, err := os.Open(r.path)
	if err != nil {
		return false
	}
	r.f.Close()
	r.f, r.off = f, 0
	return true
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}
