package toolctx

import (
	"os"
	"path/filepath"
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
// HookPath (docs/watch.md).
type Sessions struct {
	base string
	wait time.Duration

	mu   sync.Mutex
	runs map[string]*Run
	// used is when each session was last published to; one idle past
	// idleAfter, with no call pending, has its directory removed, so a
	// watch that runs for months holds the sessions in use, not every
	// one it ever read. Its hooks' counts are kept in closed.
	used   map[string]time.Time
	closed Misses
	now    func() time.Time
}

// idleAfter is how long a session's directory outlives its last
// entry: far past a hook's wait, so no call that could still be
// waiting loses it.
const idleAfter = time.Hour

// OpenSessions prepares the base directory for watch, and writes the hook
// to hookPath (0600), where the setup line sources it.
func OpenSessions(opts Options, hookPath string) (*Sessions, error) {
	if err := privateDir(opts.Base); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(hookPath), 0o700); err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Dir(hookPath), filepath.Base(hookPath), hook); err != nil {
		return nil, err
	}
	// What an earlier watch left: its sessions' entries are stale.
	if ents, err := os.ReadDir(opts.Base); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "s-") && e.IsDir() {
				_ = os.RemoveAll(filepath.Join(opts.Base, e.Name()))
			}
		}
	}
	if err := mkfifo(filepath.Join(opts.Base, "wait")); err != nil && !os.IsExist(err) {
		return nil, err
	}
	if err := writeFile(opts.Base, "watch.pid", []byte(strconv.Itoa(os.Getpid())+"\n")); err != nil {
		return nil, err
	}
	return &Sessions{base: opts.Base, wait: opts.Wait, runs: map[string]*Run{}, used: map[string]time.Time{}, now: time.Now}, nil
}

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
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return nil
	}
	if err := mkfifo(filepath.Join(dir, "wait")); err != nil && !os.IsExist(err) {
		return nil
	}
	r := &Run{dir: dir, pid: os.Getpid(), wait: s.wait, calls: map[string]*call{}}
	s.runs[id] = r
	s.used[id] = now
	return r
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

// Seen marks session id as read to the end of its file, as of mtime.
func (s *Sessions) Seen(id string, mtime time.Time) {
	if r := s.session(id); r != nil {
		r.Seen(id, mtime)
	}
}

// Done removes call callID's entry, whichever session holds it.
func (s *Sessions) Done(callID string) {
	s.mu.Lock()
	runs := make([]*Run, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.Done(callID)
	}
}

// Close removes every session's directory and watch.pid, and returns
// what the hooks counted.
func (s *Sessions) Close() Misses {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.closed
	for _, r := range s.runs {
		m.add(r.Close())
	}
	_ = os.Remove(filepath.Join(s.base, "watch.pid"))
	return m
}
