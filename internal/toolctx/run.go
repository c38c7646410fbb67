package toolctx

import (
	"context"
	_ "embed"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

//go:embed hook.bash
var hook []byte

// HookName is the hook's file name in a run's directory.
const HookName = "hook.bash"

// Run publishes the trace context of one pi-otel process's bash calls, in
// a directory of its own below the private base directory. Each call's
// entry c.SEQ holds its TRACEPARENT and TRACESTATE lines, then the whole
// command; index lists "LENGTH SEQ" for every entry, so that the hook
// finds candidates without a glob and compares whole commands. The hook
// claims an entry by creating k.SEQ, so that identical commands running
// at once each take their own. A hook that finds no entry asks through
// the fifo ask (see asker), and pi-otel answers once it has read what Pi
// wrote before the question.
type Run struct {
	dir  string
	pid  int
	wait time.Duration
	// lock is held while the run lives: another pi-otel removes the
	// directory of a run whose lock it can take (removeStale).
	lock *os.File
	ask  *asker

	mu    sync.Mutex
	seq   int
	calls map[string]*call
	// closed is set by Close; nothing is written after it.
	closed bool
}

type call struct {
	seq     int
	command string
	sc      trace.SpanContext
	// keep marks a command that keeps the context its bash inherits.
	keep bool
}

// Options configure a Run.
type Options struct {
	// Base is the private base directory (BaseDir if empty).
	Base string
	// Wait bounds how long a hook waits for pi-otel's answer.
	Wait time.Duration
	// Late, if set, is called once when a question was answered after
	// its hook had stopped waiting.
	Late func()
}

// Open creates this process's directory below the base, with the hook,
// its lock and the fifos in it, and removes what pi-otel processes that
// are gone left behind. It refuses a base directory that is not private.
func Open(opts Options) (*Run, error) {
	if err := privateDir(opts.Base); err != nil {
		return nil, err
	}
	removeStale(opts.Base)
	pid := os.Getpid()
	dir, err := os.MkdirTemp(opts.Base, "run-"+strconv.Itoa(pid)+"-")
	if err != nil {
		return nil, err
	}
	r := &Run{dir: dir, pid: pid, wait: opts.Wait, calls: map[string]*call{}}
	r.lock, err = createLocked(dir, "lock")
	if err == nil {
		err = writeFile(dir, HookName, hook)
	}
	if err == nil {
		err = writeFile(dir, "index", nil)
	}
	if err == nil {
		r.ask, err = newAsker(dir, opts.Wait, opts.Late)
	}
	if err != nil {
		r.remove()
		return nil, err
	}
	return r, nil
}

// removeStale deletes the directories of runs whose pi-otel has exited
// (a crash, a kill -9) without removing its own: those whose lock nobody
// holds. A lock works across PID namespaces, where a pid does not. A
// directory without a lock is being created, or was left by an older
// pi-otel, and is left alone.
func removeStale(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "run-") || !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		if f, err := openLock(filepath.Join(dir, "lock"), false); err == nil {
			_ = os.RemoveAll(dir)
			_ = f.Close()
		}
	}
}

// Dir is the run's directory.
func (r *Run) Dir() string { return r.dir }

// SetSync sets what a question waits for before its answer (Sync); until
// it is set, a question waits for it to be.
func (r *Run) SetSync(f Sync) { r.ask.setSync(f) }

// Env is what Pi's environment needs for the hook to run in every bash
// call: BASH_ENV names the hook, which then reads the user's own BASH_ENV
// (kept in PI_OTEL_USER_BASH_ENV) as bash would have. An empty BASH_ENV
// is no BASH_ENV, to bash as here.
func (r *Run) Env(getenv func(string) string) []string {
	env := []string{
		"BASH_ENV=" + filepath.Join(r.dir, HookName),
		"PI_OTEL_HOOK=" + r.dir,
		"PI_OTEL_PID=" + strconv.Itoa(r.pid),
		"PI_OTEL_HOOK_WAIT_MS=" + strconv.FormatInt(max(r.wait.Milliseconds(), 1), 10),
	}
	user := getenv("BASH_ENV")
	// Under a pi-otel's bash call whose hook did not run (a plain sh in
	// between), BASH_ENV is still that pi-otel's hook: the user's is the
	// one it kept.
	if getenv("PI_OTEL_HOOK") != "" {
		user = getenv("PI_OTEL_USER_BASH_ENV")
	}
	if user != "" {
		env = append(env, "PI_OTEL_USER_BASH_ENV="+user)
	}
	return env
}

// Call publishes bash call id, which runs command, with sc, the context
// of its execute_tool span: the mapper names it as soon as it reads the
// assistant message that asks for the call, and again once its span has
// started, which may correct it.
func (r *Run) Call(id, command string, sc trace.SpanContext) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	c := r.calls[id]
	if c != nil {
		if c.keep || c.sc.Equal(sc) {
			return
		}
		c.sc = sc
		r.write(c)
		return
	}
	r.seq++
	c = &call{seq: r.seq, command: command, sc: sc}
	r.calls[id] = c
	r.write(c)
	r.writeIndex()
}

// Keep publishes command, run by id, as one that keeps the context its
// bash inherits (an RPC bash command, which is no tool call): its hook
// neither asks nor counts a miss.
func (r *Run) Keep(id, command string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.calls[id] != nil {
		return
	}
	r.seq++
	c := &call{seq: r.seq, command: command, keep: true}
	r.calls[id] = c
	r.write(c)
	r.writeIndex()
}

// Done removes call id's entry: its bash has long read it.
func (r *Run) Done(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls[id]
	if c == nil {
		return
	}
	delete(r.calls, id)
	if r.closed {
		return
	}
	r.writeIndex()
	seq := strconv.Itoa(c.seq)
	_ = os.Remove(filepath.Join(r.dir, "c."+seq))
	_ = os.Remove(filepath.Join(r.dir, "k."+seq))
}

// write publishes c's entry atomically: the hook reads a whole entry or
// none. r.mu is held.
func (r *Run) write(c *call) {
	var b strings.Builder
	switch {
	case c.keep:
		b.WriteString("-\n\n")
	case c.sc.IsValid():
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), c.sc), carrier)
		b.WriteString(carrier["traceparent"] + "\n" + carrier["tracestate"] + "\n")
	default:
		b.WriteString("\n\n")
	}
	b.WriteString(c.command)
	_ = writeFile(r.dir, "c."+strconv.Itoa(c.seq), []byte(b.String()))
}

// writeIndex lists the entries, in the order published. r.mu is held.
func (r *Run) writeIndex() {
	calls := slices.SortedFunc(maps.Values(r.calls), func(a, b *call) int { return a.seq - b.seq })
	var b []byte
	for _, c := range calls {
		b = strconv.AppendInt(b, int64(len(c.command)), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(c.seq), 10)
		b = append(b, '\n')
	}
	_ = writeFile(r.dir, "index", b)
}

// Misses counts the bash calls that went on without pi-otel's answer.
type Misses struct {
	// Timeout waited for pi-otel's answer in vain (--propagation-wait).
	Timeout int64
}

// Total is the number of bash calls that ran without being sure of their
// call's context.
func (m Misses) Total() int64 { return m.Timeout }

func (m *Misses) add(o Misses) { m.Timeout += o.Timeout }

// Misses reads what the hooks have counted so far.
func (r *Run) Misses() Misses {
	if r.ask == nil {
		return Misses{}
	}
	return Misses{Timeout: r.ask.timeouts.Load()}
}

// Close stops publishing and removes the run's directory; the counts of
// Misses stay.
func (r *Run) Close() Misses {
	if r.ask != nil {
		r.ask.close()
	}
	m := r.Misses()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.remove()
	return m
}

// remove deletes the directory, then gives up its lock.
func (r *Run) remove() {
	_ = os.RemoveAll(r.dir)
	if r.lock != nil {
		_ = r.lock.Close()
	}
}

// pending reports whether a call's entry is still published: its hook may
// yet read it.
func (r *Run) pending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls) > 0
}

// writeFile writes name in dir through a temporary file, created
// exclusively and 0600, and a rename, which replaces a link rather than
// following it.
func writeFile(dir, name string, body []byte) error {
	f, err := os.CreateTemp(dir, "t.")
	if err != nil {
		return err
	}
	_, err = f.Write(body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// errBusy says a lock is held by another process.
var errBusy = errors.New("held by another process")
