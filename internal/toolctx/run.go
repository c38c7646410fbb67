package toolctx

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
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
// a directory of its own below the private base directory. Entries are
// named c.KEY.SEQ (Key), and hold two lines: TRACEPARENT and TRACESTATE.
// An empty entry says a call is expected but its context is not known
// yet; the hook then waits for it, a bounded time. The hook claims an
// entry by creating k.KEY.SEQ, so parallel calls with one key each take
// their own, and counts a bash call it found no context for with a byte
// in the file misses.
type Run struct {
	dir  string
	pid  int
	wait time.Duration

	mu    sync.Mutex
	seq   int
	calls map[string]*call
	// closed is set by Close; nothing is written after it.
	closed bool
	// failed counts entries that could not be written.
	failed int64
}

type call struct {
	name string // c.KEY.SEQ, once the command is known
	sc   trace.SpanContext
	// keep marks a command that keeps the context its bash inherits.
	keep bool
}

// Options configure a Run.
type Options struct {
	// Base is the private base directory (BaseDir if empty).
	Base string
	// Wait bounds how long a hook waits for an expected call's context.
	Wait time.Duration
}

// Open creates this process's directory below the base, with the hook and
// the wait fifo in it, and removes what pi-otel processes that are gone
// left behind. It refuses a base directory that is not private.
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
	if err := writeFile(dir, HookName, hook); err != nil {
		r.remove()
		return nil, err
	}
	if err := mkfifo(filepath.Join(dir, "wait")); err != nil {
		r.remove()
		return nil, err
	}
	// No Pi yet: a bash pi-otel starts itself (a wrapper of Pi's) waits
	// for nothing. SetPi names Pi once it runs.
	r.SetPi(0)
	return r, nil
}

// removeStale deletes the directories of runs whose pi-otel has exited
// (a crash, a kill -9) without removing its own.
func removeStale(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), "run-")
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		if pid, err := strconv.Atoi(pidText); err == nil && pid != os.Getpid() && !alive(pid) {
			_ = os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

// Dir is the run's directory.
func (r *Run) Dir() string { return r.dir }

// Env is what Pi's environment needs for the hook to run in every bash
// call: BASH_ENV names the hook, which then reads the user's own BASH_ENV
// (kept in PI_OTEL_USER_BASH_ENV) as bash would have. An empty BASH_ENV
// is no BASH_ENV, to bash as here.
func (r *Run) Env(getenv func(string) string) []string {
	env := []string{
		"BASH_ENV=" + filepath.Join(r.dir, HookName),
		"PI_OTEL_HOOK=" + r.dir,
		"PI_OTEL_PID=" + strconv.Itoa(r.pid),
		"PI_OTEL_HOOK_WAIT_MS=" + strconv.FormatInt(r.wait.Milliseconds(), 10),
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

// Expect says that bash call id will run command: its entry is created
// now, empty unless its context is known, so that the hook finds it even
// before the call's span exists.
func (r *Run) Expect(id, command string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.call(id)
	if c.name != "" || r.closed {
		return
	}
	c.name = r.entryName(command)
	r.write(c)
}

// Keep publishes command, run by id, as one that keeps the context its
// bash inherits (an RPC bash command, which is no tool call): its hook
// neither waits nor counts a miss.
func (r *Run) Keep(id, command string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.calls[id] != nil {
		return
	}
	c := &call{name: r.entryName(command), keep: true}
	r.calls[id] = c
	r.write(c)
}

// SetPi names Pi's process: its own bash calls, and no other bash, wait
// for an entry not published yet, since Pi starts them right after
// writing the records that ask for them, which pi-otel may not have read.
func (r *Run) SetPi(pid int) {
	if err := writeFile(r.dir, "pi.pid", []byte(strconv.Itoa(pid)+"\n")); err != nil {
		r.mu.Lock()
		r.failed++
		r.mu.Unlock()
	}
}

// Seen says that pi-otel has read session file sessionID up to its end,
// as it was at mtime: a bash call of that session whose file is no newer
// finds every entry there will be, and waits for none.
func (r *Run) Seen(sessionID string, mtime time.Time) {
	if !safeName(sessionID) {
		return
	}
	name := filepath.Join(r.dir, "seen-"+sessionID)
	if err := os.Chtimes(name, mtime, mtime); err == nil {
		return
	}
	if err := writeFile(r.dir, "seen-"+sessionID, nil); err == nil {
		_ = os.Chtimes(name, mtime, mtime)
	}
}

// safeName accepts the ids Pi gives sessions (UUIDs) as file names.
func safeName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Resolve gives call id's trace context, which its processes get.
func (r *Run) Resolve(id string, sc trace.SpanContext) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.call(id)
	if c.sc.Equal(sc) || r.closed {
		return
	}
	c.sc = sc
	if c.name != "" {
		r.write(c)
	}
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
	if c.name != "" && !r.closed {
		_ = os.Remove(filepath.Join(r.dir, c.name))
		_ = os.Remove(filepath.Join(r.dir, "k"+strings.TrimPrefix(c.name, "c")))
	}
}

// entryName names the next entry, for command: c.KEY.SEQ; r.mu is held.
func (r *Run) entryName(command string) string {
	r.seq++
	return fmt.Sprintf("c.%s.%08d", Key(command), r.seq)
}

// call is call id's record, new if need be; r.mu is held.
func (r *Run) call(id string) *call {
	c := r.calls[id]
	if c == nil {
		c = &call{}
		r.calls[id] = c
	}
	return c
}

// write publishes c's entry atomically: the hook reads a whole entry or
// none.
func (r *Run) write(c *call) {
	var body []byte
	if c.keep {
		body = []byte("-\n\n")
	} else if c.sc.IsValid() {
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), c.sc), carrier)
		body = []byte(carrier["traceparent"] + "\n" + carrier["tracestate"] + "\n")
	}
	if err := writeFile(r.dir, c.name, body); err != nil {
		r.failed++
	}
}

// Misses counts the bash calls whose hook found no context, by reason.
type Misses struct {
	// None found no entry for their command: not a tool call pi-otel
	// saw (a user's ! command), or one it had not read yet.
	None int64
	// Timeout waited for an expected call's context in vain.
	Timeout int64
	// Gone found pi-otel exited.
	Gone int64
	// Unwritten entries could not be written.
	Unwritten int64
}

// Total is the number of bash calls that ran without their call's context.
func (m Misses) Total() int64 { return m.None + m.Timeout + m.Gone }

func (m *Misses) add(o Misses) {
	m.None += o.None
	m.Timeout += o.Timeout
	m.Gone += o.Gone
	m.Unwritten += o.Unwritten
}

// Misses reads what the hooks have counted so far.
func (r *Run) Misses() Misses {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := Misses{Unwritten: r.failed}
	b, _ := os.ReadFile(filepath.Join(r.dir, "misses"))
	for _, c := range b {
		switch c {
		case 'n':
			m.None++
		case 't':
			m.Timeout++
		case 'g':
			m.Gone++
		}
	}
	return m
}

// Close stops publishing and removes the run's directory; the counts of
// Misses stay.
func (r *Run) Close() Misses {
	m := r.Misses()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.remove()
	return m
}

func (r *Run) remove() { _ = os.RemoveAll(r.dir) }

// pending reports whether a call's entry is still published: its hook may
// yet read it.
func (r *Run) pending() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls) > 0
}

// writeFile writes name in dir through a temporary file and a rename, with
// mode 0600.
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

// Call publishes bash call id, which runs command, with sc, the context
// of its execute_tool span: the mapper names it as soon as it reads the
// assistant message that asks for the call, and again once its span has
// started, which may correct it. The command only keys the entry.
func (r *Run) Call(id, command string, sc trace.SpanContext) {
	r.Resolve(id, sc)
	r.Expect(id, command)
}
