package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/pi-otel/pi-otel/internal/launch"
)

// orphanGrace is how long the reader may sit in an empty Read after Pi has
// exited before we stop waiting for the pipe's EOF.
const orphanGrace = 500 * time.Millisecond

// pumpStdout runs forward over Pi's stdout and waits for Pi to exit. A
// process Pi left behind (a bash tool's child after SIGINT) can hold the
// pipe open long after Pi is gone; once Pi has exited and the reader has
// waited in Read for orphanGrace with nothing to read, the pipe is closed
// so pi-otel does not wait for that process. A reader held up by a slow
// consumer is not in Read, so no data is ever cut off.
func pumpStdout(env Env, proc *launch.Process, forward func(io.Reader) error) launch.Status {
	r := &watchedReader{r: proc.Stdout()}
	done := make(chan error, 1)
	go func() { done <- forward(r) }()

	var ferr error
	select {
	case ferr = <-done:
	case <-proc.Done():
		tick := time.NewTicker(orphanGrace / 5)
		defer tick.Stop()
	wait:
		for {
			select {
			case ferr = <-done:
				break wait
			case <-tick.C:
				if r.idle() > orphanGrace {
					_ = proc.Stdout().Close()
				}
			}
		}
	}
	if ferr != nil && !errors.Is(ferr, os.ErrClosed) {
		fmt.Fprintf(env.Stderr, "pi-otel: reading pi's stdout: %v\n", ferr)
	}
	status, werr := proc.Wait()
	if werr != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: waiting for pi: %v\n", werr)
	}
	return status
}

// watchedReader knows how long a Read has been waiting.
type watchedReader struct {
	r      io.Reader
	inRead atomic.Int64 // when the pending Read began (unix ns), or 0
}

func (w *watchedReader) Read(p []byte) (int, error) {
	w.inRead.Store(time.Now().UnixNano())
	n, err := w.r.Read(p)
	w.inRead.Store(0)
	return n, err
}

func (w *watchedReader) idle() time.Duration {
	since := w.inRead.Load()
	if since == 0 {
		return 0
	}
	return time.Since(time.Unix(0, since))
}
