// Package follow reads a file that is still being written, like tail -F:
// at the end it waits for more, and it starts over when the file is
// truncated or replaced (log rotation).
package follow

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Reader is an io.Reader over a growing file. It returns io.EOF only once
// its context is done.
type Reader struct {
	ctx  context.Context
	path string
	poll time.Duration
	f    *os.File
	off  int64
	// lastLF: the last byte returned ended a line. When the file is
	// truncated or replaced mid-line, the Reader ends that line itself,
	// so the partial record is counted as malformed instead of being
	// glued to the first record of the new content.
	lastLF   bool
	pendLF   bool
	returned bool
}

type config struct{ poll time.Duration }

// Option configures a Reader.
type Option = option.Option[config]

// WithPoll sets how often the file is checked at its end (default 250ms).
// Values below 1 are ignored.
func WithPoll(d time.Duration) Option {
	return option.Func[config](func(c *config) {
		if d > 0 {
			c.poll = d
		}
	})
}

// Open follows path until ctx is done. A file that does not exist yet is
// waited for, as tail -F does.
func Open(ctx context.Context, path string, opts ...Option) (*Reader, error) {
	c := option.Apply(config{poll: 250 * time.Millisecond}, opts)
	r := &Reader{ctx: ctx, path: path, poll: c.poll}
	f, err := OpenFile(ctx, path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	r.f = f
	return r, nil
}

// OpenFile opens path for reading like os.Open, but gives up when ctx is
// done: opening a FIFO waits for a writer, and that wait must not hold off
// a signal. A read blocked on the file also ends then, as the file is
// closed.
func OpenFile(ctx context.Context, path string) (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		f, err := os.Open(path)
		ch <- result{f, err}
	}()
	select {
	case r := <-ch:
		if r.f != nil {
			context.AfterFunc(ctx, func() { r.f.Close() })
		}
		return r.f, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.f != nil {
				r.f.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// Read reads what is there, or waits for more.
func (r *Reader) Read(p []byte) (int, error) {
	for {
		if r.pendLF && len(p) > 0 {
			r.pendLF, r.lastLF = false, true
			p[0] = '\n'
			return 1, nil
		}
		if r.f != nil {
			n, err := r.f.Read(p)
			r.off += int64(n)
			if n > 0 {
				r.returned = true
				r.lastLF = p[n-1] == '\n'
				return n, nil
			}
			if r.ctx.Err() != nil {
				return 0, io.EOF
			}
			if err != nil && err != io.EOF {
				return 0, err
			}
			if r.reopenIfMoved() {
				continue
			}
		} else if f, err := OpenFile(r.ctx, r.path); err == nil {
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
			r.endLine()
			return true
		}
	}
	now, err := os.Stat(r.path)
	if err != nil || os.SameFile(cur, now) {
		return false
	}
	// Replaced (rotated): finish the old file first, then switch.
	f, err := OpenFile(r.ctx, r.path)
	if err != nil {
		return false
	}
	r.f.Close()
	r.f, r.off = f, 0
	r.endLine()
	return true
}

// endLine ends a line left open by content that is gone.
func (r *Reader) endLine() {
	if r.returned && !r.lastLF {
		r.pendLF = true
	}
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.f == nil {
		return nil
	}
	return r.f.Close()
}
