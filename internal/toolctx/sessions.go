package toolctx

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Sessions publishes the bash calls of plain Pis that pi-otel watch
// traces from their session files: a directory per session (s-ID) below
// the base, which the hook finds from PI_SESSION_ID, and watch's pid in
// watch.pid. The hook is sourced through Pi's shellCommandPrefix from
// HookPath (docs/watch.md). One watch of a user publishes at a time: it
// holds the lock watch.lock in the base directory while it runs.
type Sessions struct {
	base string
	lock *os.File
	ask  *asker

	mu   sync.Mutex
	runs map[string]*Run
	// used is when each session was last published to; one idle past
	// idleAfter, with no call pending, has its directory removed, so a
	// watch that runs for months holds the sessions in use, not every
	// one it ever read.
	used   map[string]time.Time
	closed Misses
	now    func() time.Time
	done   bool
}

// idleAfter is how long a session's directory outlives its last
// entry: far past a hook's wait, so no call that could still be
// waiting loses it.
const idleAfter = time.Hour

// ErrOtherWatch says another pi-otel watch of this user publishes in the
// base directory.
var ErrOtherWatch = errors.New("another pi-otel watch publishes there")

// OpenSessions prepares the base directory for watch, and writes the hook
// to hookPath (0600), where the setup line sources it. It returns
// ErrOtherWatch while another watch holds the base.
func OpenSessions(opts Options, hookPath string) (*Sessions, error) {
	if err := privateDir(opts.Base); err != nil {
		return nil, err
	}
	lk, err := openLock(filepath.Join(opts.Base, "watch.lock"), true)
	if err == errBusy {
		return nil, fmt.Errorf("%s: %w", opts.Base, ErrOtherWatch)
	}
	if err != nil {
		return nil, err
	}
	s := &Sessions{base: opts.Base, lock: lk, runs: map[string]*Run{}, used: map[string]time.Time{}, now: time.Now}
	fail := func(err error) (*Sessions, error) {
		s.clean()
		_ = lk.Close()
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(hookPath), 0o700); err != nil {
		return fail(err)
	}
	if err := writeFile(filepath.Dir(hookPath), filepath.Base(hookPath), hook); err != nil {
		return fail(err)
	}
	// What an earlier watch left (a crash): its sessions' entries are
	// stale, and no other watch runs.
	s.clean()
	if s.ask, err = newAsker(opts.Base, opts.Wait, opts.Late); err != nil {
		return fail(err)
	}
	// Last: the hook asks only once watch.pid is there.
	if err := writeFile(opts.Base, "watch.pid", []byte(strconv.Itoa(os.Getpid())+"\n")); err != nil {
		s.ask.close()
		return fail(err)
	}
	return s, nil
}

// clean removes watch.pid, the sessions' directories and the answers: the
// lock is held.
func (s *Sessions) clean() {
	_ = os.Remove(filepath.Join(s.base, "watch.pid"))
	ents, err := os.ReadDir(s.base)
	if err != nil {
		return
	}
	for _, e := range ents {
		switch n := e.Name(); {
		case strings.HasPrefix(n, "s-") && e.IsDir():
			_ = os.RemoveAll(filepath.Join(s.base, n))
		case strings.HasPrefix(n, "a.") && e.Type().IsRegular():
			_ = os.Remove(filepath.Join(s.base, n))
		}
	}
}

// SetSync sets what a question waits for before its answer (Sync).
func (s *Sessions) SetSync(f Sync) { s.ask.setSync(f) }

// HookPath is where watch writes the hook for the setup line:
// $XDG_STATE_HOME/pi-otel/hook.bash, else ~/.local/state/pi-otel/hook.bash.
func HookPath(getenv func(string) string, home string) string {
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "pi-otel", HookName)
	}
	return filepath.Join(home, ".local", "state", "pi-otel", HookName)
}

// session is the Run of session id, created at its first use.
func (s *Sessions) session(id string) *Run {
	if !safeName(id) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if r := s.runs[id]; r != nil {
		s.used[id] = now
		return r
	}
	s.sweep(now)
	dir := filepath.Join(s.base, "s-"+id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		// Only this watch writes here, and it removed the earlier
		// watch's directories: one that is there is not ours.
		return nil
	}
	r := &Run{dir: dir, pid: os.Getpid(), calls: map[string]*call{}}
	s.runs[id] = r
	s.used[id] = now
	return r
}

// safeName accepts the ids Pi gives sessions (UUIDs) as file names.
func safeName(s string) bool {
	return s != "" && len(s) <= 128 && !strings.ContainsFunc(s, func(c rune) bool {
		return !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
	})
}

// sweep removes the directories of sessions idle past idleAfter with no
// call pending; it runs as a session is added, so the sessions held stay
// those in use. s.mu is held.
func (s *Sessions) sweep(now time.Time) {
	for id, at := range s.used {
		r := s.runs[id]
		if now.Sub(at) <= idleAfter || r.pending() {
			continue
		}
		s.closed.add(r.Close())
		delete(s.runs, id)
		delete(s.used, id)
	}
}

// Call publishes bash call callID of session id (Run.Call).
func (s *Sessions) Call(id, callID, command string, sc trace.SpanContext) {
	if r := s.session(id); r != nil {
		r.Call(callID, command, sc)
	}
}

// Done removes call callID's entry, whichever session holds it.
func (s *Sessions) Done(callID string) {
	s.mu.Lock()
	runs := slices.Collect(maps.Values(s.runs))
	s.mu.Unlock()
	for _, r := range runs {
		r.Done(callID)
	}
}

// Close removes watch.pid first (hooks stop asking), then every session's
// directory, and gives up the base; it returns what the hooks counted.
// A later watch can take the base only then, so nothing it writes is
// removed here.
func (s *Sessions) Close() Misses {
	s.mu.Lock()
	if s.done {
		defer s.mu.Unlock()
		return s.closed
	}
	s.done = true
	s.mu.Unlock()
	_ = os.Remove(filepath.Join(s.base, "watch.pid"))
	s.ask.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.closed
	for _, r := range s.runs {
		m.add(r.Close())
	}
	s.runs = map[string]*Run{}
	m.Timeout += s.ask.timeouts.Load()
	s.closed = m
	s.clean()
	_ = s.lock.Close()
	return m
}
