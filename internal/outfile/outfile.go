// Package outfile is how pi-otel writes its own output: trace and metric
// files, the console tree and its stderr lines.
//
// Two promises hold for every Writer. A stalled reader (a FIFO nobody
// reads, a terminal suspended with Ctrl-S, a full pipe) holds up only the
// Writer's own goroutine: a caller gives up at the Writer's deadline, like
// a net.Conn's, so pi-otel still exits within its flush timeout with Pi's
// exit code. And a file is created private to the user (0600), is never
// written through a symlink someone else planted, and a FIFO is opened in
// the background, so that opening it never blocks start-up or signals.
//
// A file of lines also stays one: a write cut short is undone, and a last
// line cut short by a process killed while writing it is ended before the
// first new line (see OnTornLine).
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
)

// ErrStalled is returned by a write that did not finish by the deadline.
var ErrStalled = errors.New("output stalled: its reader is not reading")

// finishGrace is how long past the deadline a write already under way may
// take to end.
const finishGrace = 50 * time.Millisecond

// Writer writes through one goroutine. It is safe for concurrent use;
// writes keep their order.
type Writer struct {
	reqs chan request
	turn chan struct{} // held by the one caller whose write is under way
	quit chan struct{}

	mu       sync.Mutex
	deadline time.Time
	wake     chan struct{} // closed when the deadline changes
	closer   io.Closer
	once     sync.Once
	stalled  atomic.Bool
}

type request struct {
	p    []byte
	done chan error
}

// Wrap returns a Writer that writes to w (for example stderr). Closing it
// does not close w.
func Wrap(w io.Writer) *Writer {
	return start(func() (io.Writer, error) { return w, nil }, nil)
}

// Option configures Open.
type Option = option.Option[openConfig]

type openConfig struct {
	torn func()
}

// OnTornLine has f called, from the Writer's goroutine before its first
// write, when the regular file at path ended in a line cut short and the
// Writer ended it there with a newline: that line is not whole (not JSON,
// say), and every line after it is.
func OnTornLine(f func()) Option {
	return option.Func[openConfig](func(c *openConfig) { c.torn = f })
}

// Open opens path for appending, creating it 0600. A symlink at path is
// followed only if it belongs to the user running pi-otel; one planted by
// someone else (in a shared /tmp, say) is refused. A FIFO is opened by the
// Writer's goroutine, so Open returns at once; writes wait for a reader
// until the deadline. A regular file that does not end in a newline gets
// one before the first write (see OnTornLine).
func Open(path string, opts ...Option) (*Writer, error) {
	cfg := option.Apply(openConfig{}, opts)
	// Read as well as written, to see how the file ends.
	flags := os.O_RDWR | os.O_CREATE | os.O_APPEND
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Created by us: a symlink that appears in the meantime is not
		// followed.
		flags |= syscall.O_NOFOLLOW | os.O_EXCL
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink == 0:
		// Not a symlink now: one swapped in before the open is not followed.
		flags |= syscall.O_NOFOLLOW
	default:
		if owner(fi) != os.Getuid() {
			return nil, fmt.Errorf("%s is a symlink owned by uid %d, not by you: refusing to write through it", path, owner(fi))
		}
		if fi, err = os.Stat(path); err != nil {
			return nil, err
		}
	}
	if fi != nil && fi.Mode()&fs.ModeNamedPipe != 0 {
		var mu sync.Mutex
		var f *os.File
		w := start(func() (io.Writer, error) {
			g, err := os.OpenFile(path, os.O_WRONLY, 0)
			mu.Lock()
			f = g
			mu.Unlock()
			return g, err
		}, closerFunc(func() error {
			mu.Lock()
			defer mu.Unlock()
			if f != nil {
				return f.Close()
			}
			return nil
		}))
		return w, nil
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrPermission) {
		// A file we may write and not read: appended to unseen.
		f, err = os.OpenFile(path, flags&^os.O_RDWR|os.O_WRONLY, 0o600)
	}
	if errors.Is(err, fs.ErrExist) {
		// Lost a race with another creator: open what is there now, once.
		return Open(path, opts...)
	}
	if err != nil {
		return nil, err
	}
	return start(func() (io.Writer, error) {
		if endTornLine(f) && cfg.torn != nil {
			cfg.torn()
		}
		return wholeWrites{f}, nil
	}, f), nil
}

// settle is how long endTornLine watches a last line without its newline
// for a writer still adding to it, and settleTries how many times.
const (
	settle      = 100 * time.Millisecond
	settleTries = 10
)

// pause waits settle; tests take its place.
var pause = func() { time.Sleep(settle) }

// endTornLine ends the last line of a regular file with a newline if a
// process was killed while writing it (or the machine went down): lines
// appended after it would be glued to it, and the first of them lost with
// it. A line still being written by another process, which ends it
// itself, is told apart by its growing; two processes opening the file at
// once take turns, so that the line is ended once. It reports whether it
// ended one.
func endTornLine(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return false
	}
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX) == nil {
		defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	size := int64(-1)
	for range settleTries {
		if fi, err = f.Stat(); err != nil || fi.Size() == 0 {
			return false
		}
		var last [1]byte
		if _, err := f.ReadAt(last[:], fi.Size()-1); err != nil || last[0] == '\n' {
			return false // ends whole, or unreadable (write-only): left as it is
		}
		if fi.Size() == size {
			_, err := f.Write([]byte{'\n'})
			return err == nil
		}
		size = fi.Size()
		pause()
	}
	return false // still growing: its writer is alive and ends it
}

// file is what wholeWrites needs of an *os.File.
type file interface {
	io.Writer
	io.Seeker
	Truncate(size int64) error
}

// wholeWrites makes each write to a regular file whole or nothing: a write
// cut short (a full disk, a file size limit) is truncated away, so that a
// file of lines never ends in half a line that its readers choke on and
// the next line would be glued to. The file is opened O_APPEND, so the
// offset after a write is the end of what it wrote.
type wholeWrites struct{ f file }

func (w wholeWrites) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if n > 0 && n < len(p) {
		end, serr := w.f.Seek(0, io.SeekCurrent)
		if serr == nil && end >= int64(n) && w.f.Truncate(end-int64(n)) == nil {
			n = 0
		}
	}
	return n, err
}

type closerFunc func() error

func (c closerFunc) Close() error { return c() }

func owner(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return os.Getuid()
}

func start(open func() (io.Writer, error), c io.Closer) *Writer {
	w := &Writer{
		reqs:   make(chan request),
		turn:   make(chan struct{}, 1),
		quit:   make(chan struct{}),
		wake:   make(chan struct{}),
		closer: c,
	}
	go w.loop(open)
	return w
}

func (w *Writer) loop(open func() (io.Writer, error)) {
	out, err := open()
	for {
		select {
		case <-w.quit:
			return
		case r := <-w.reqs:
			if err == nil {
				_, werr := out.Write(r.p)
				r.done <- werr
			} else {
				r.done <- err
			}
		}
	}
}

// Stalled reports whether a write has given up: the reader has stopped.
func (w *Writer) Stalled() bool { return w.stalled.Load() }

// SetDeadline bounds every write, including one already waiting. The zero
// time means no deadline.
func (w *Writer) SetDeadline(t time.Time) {
	w.mu.Lock()
	w.deadline = t
	close(w.wake)
	w.wake = make(chan struct{})
	w.mu.Unlock()
}

func (w *Writer) clock() (expired <-chan time.Time, wake <-chan struct{}, stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deadline.IsZero() {
		return nil, w.wake, func() {}
	}
	t := time.NewTimer(time.Until(w.deadline))
	return t.C, w.wake, func() { t.Stop() }
}

// Write hands p to the Writer's goroutine and waits until it is written or
// the deadline passes. p is copied: a write given up on may still finish.
func (w *Writer) Write(p []byte) (int, error) {
	req := request{p: append([]byte(nil), p...), done: make(chan error, 1)}
	const (
		waitTurn = iota
		handOver
		writing
	)
	stage := waitTurn
	for {
		var turn chan<- struct{}
		var reqs chan<- request
		var done <-chan error
		switch stage {
		case waitTurn:
			turn = w.turn
		case handOver:
			reqs = w.reqs
		case writing:
			done = req.done
		}
		// What is ready now wins over a deadline that has already passed.
		select {
		case turn <- struct{}{}:
			stage = handOver
			continue
		case reqs <- req:
			stage = writing
			continue
		default:
		}
		expired, wake, stop := w.clock()
		select {
		case turn <- struct{}{}:
			stage = handOver
		case reqs <- req:
			stage = writing
		case err := <-done:
			stop()
			<-w.turn
			if err != nil {
				return 0, err
			}
			return len(p), nil
		case <-expired:
			stop()
			if stage == writing {
				// A write under way as the deadline comes gets a moment
				// more: a healthy one ends in microseconds.
				t := time.NewTimer(finishGrace)
				select {
				case err := <-done:
					t.Stop()
					<-w.turn
					if err != nil {
						return 0, err
					}
					return len(p), nil
				case <-t.C:
				}
			}
			if stage != waitTurn {
				<-w.turn
			}
			w.stalled.Store(true)
			return 0, ErrStalled
		case <-w.quit:
			stop()
			if stage != waitTurn {
				<-w.turn
			}
			return 0, os.ErrClosed
		case <-wake:
		}
		stop()
	}
}

// Close stops the Writer and closes the file it opened, which also ends a
// write blocked on a pipe. It does not wait for a write stuck elsewhere.
func (w *Writer) Close() error {
	var err error
	w.once.Do(func() {
		close(w.quit)
		if w.closer != nil {
			err = w.closer.Close()
		}
	})
	return err
}
