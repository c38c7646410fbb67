package toolctx

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Question is what a hook asks when it finds no entry for its command:
// has pi-otel read everything Pi wrote before this moment?
type Question struct {
	// PID is the asking bash's.
	PID int
	// Session and File are the bash's PI_SESSION_ID and PI_SESSION_FILE,
	// if Pi set them.
	Session, File string
	token         string
}

// Sync returns once everything Pi wrote before q was asked has gone
// through the mapper (its output up to then, or its session file up to
// its size then), or when ctx ends. The hook then looks once more for its
// entry, and goes on.
type Sync func(ctx context.Context, q Question)

// asker answers the hooks' questions. A hook writes one line to the fifo
// ask, "q PID TOKEN SESSION FILE", and waits (polling, with a read of the
// fifo wait, which nobody writes, as its fork-free clock) for a.PID to hold TOKEN; or "m t" to count a call
// that stopped waiting. Lines are short, so each arrives whole; the fifo
// is held open read-write by pi-otel and opened read-write by the hook,
// so neither side ever blocks on the other's absence.
type asker struct {
	dir  string
	wait time.Duration
	late func()

	in *os.File
	// asked, if set (by tests), is told of each question as it arrives.
	asked    atomic.Pointer[func(Question)]
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	timeouts atomic.Int64
	saidLate atomic.Bool

	// ready is closed once sync is set: a question waits for it (at
	// most the hook's wait), since the process that reads Pi's output
	// may start after Pi, whose first bash may already be asking.
	ready chan struct{}

	mu     sync.Mutex
	sync   Sync
	closed bool
	// answered is when each a.PID was last written: they are removed a
	// while later, as bash cannot remove a file without a fork.
	answered map[int]time.Time
}

// answerLife is how long an answer file stays: far past any hook's wait.
const answerLife = time.Minute

func newAsker(dir string, wait time.Duration, late func()) (*asker, error) {
	a := &asker{dir: dir, wait: wait, late: late, answered: map[int]time.Time{}, ready: make(chan struct{})}
	for _, name := range []string{"ask", "wait"} {
		if err := makeFifo(filepath.Join(dir, name)); err != nil {
			return nil, err
		}
	}
	var err error
	if a.in, err = openFifo(filepath.Join(dir, "ask")); err != nil {
		return nil, err
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.wg.Add(1)
	go a.read()
	return a, nil
}

func (a *asker) setSync(f Sync) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sync = f
	select {
	case <-a.ready:
	default:
		close(a.ready)
	}
}

func (a *asker) read() {
	defer a.wg.Done()
	sc := bufio.NewScanner(a.in)
	for sc.Scan() {
		kind, rest, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "x":
			return // close's mark: every line before it is read
		case "m":
			if rest == "t" {
				a.timeouts.Add(1)
			}
		case "q":
			f := strings.SplitN(rest, " ", 4)
			if len(f) != 4 {
				continue
			}
			pid, err := strconv.Atoi(f[0])
			if err != nil || pid <= 0 {
				continue
			}
			q := Question{PID: pid, token: f[1], Session: f[2], File: f[3]}
			if f := a.asked.Load(); f != nil {
				(*f)(q)
			}
			a.wg.Add(1)
			go a.answer(q)
		}
	}
}

// answer waits for the question's sync, at most the hook's wait, and
// answers. The hook looks for its answer every quarter millisecond: a wake-up
// through a fifo would leave stale bytes that cut later hooks' waits short.
func (a *asker) answer(q Question) {
	defer a.wg.Done()
	ctx, cancel := context.WithTimeout(a.ctx, a.wait)
	defer cancel()
	select {
	case <-a.ready:
	case <-ctx.Done():
	}
	a.mu.Lock()
	sync := a.sync
	a.mu.Unlock()
	if sync != nil {
		sync(ctx, q)
		if ctx.Err() != nil && a.ctx.Err() == nil && !a.saidLate.Swap(true) && a.late != nil {
			a.late()
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	now := time.Now()
	for pid, at := range a.answered {
		if now.Sub(at) > answerLife {
			_ = os.Remove(filepath.Join(a.dir, "a."+strconv.Itoa(pid)))
			delete(a.answered, pid)
		}
	}
	if writeFile(a.dir, "a."+strconv.Itoa(q.PID), []byte(q.token+"\n")) == nil {
		a.answered[q.PID] = now
	}
}

// close stops answering, waits for the questions being answered, and
// removes the answers.
func (a *asker) close() {
	a.cancel()
	// A mark after the lines already in the fifo, so that their counts
	// are in; written without waiting, and the fifo is closed anyway
	// after a second.
	writeNow(a.in, []byte("x\n"))
	read := make(chan struct{})
	go func() {
		a.wg.Wait()
		close(read)
	}()
	select {
	case <-read:
	case <-time.After(time.Second):
	}
	_ = a.in.Close()
	<-read
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	for pid := range a.answered {
		_ = os.Remove(filepath.Join(a.dir, "a."+strconv.Itoa(pid)))
	}
}
