package app

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/toolctx"
)

// callContexts hands each of Pi's bash calls the trace context of its own
// execute_tool span (see internal/toolctx and docs/configuration.md,
// Propagation). It is nil when --propagation is run, or when the private
// directory is refused: Pi's processes then get the run's context.
type callContexts struct {
	run *toolctx.Run
	// sessions replaces run for watch: plain Pis, a directory per session.
	sessions *toolctx.Sessions
	misses   toolctx.Misses
	// files, for Pi traced from its session files (the TUI, watch), is
	// how far each file has been mapped: a hook's question waits for its
	// session file to be mapped up to its size when asked.
	files *fileProgress
}

// openCallContexts opens the run's directory, or says on stderr why not.
func openCallContexts(env Env, cfg config.Config) *callContexts {
	if cfg.Propagation != config.PropagateCall {
		return nil
	}
	base := cmp.Or(cfg.PropagationDir, toolctx.BaseDir(env.Getenv))
	r, err := toolctx.Open(toolctx.Options{Base: base, Wait: cfg.PropagationWait})
	if err != nil {
		if !cfg.Quiet {
			fmt.Fprintf(env.Stderr, "pi-otel: bash calls get the run's trace context, not their own: %v\n", err)
		}
		return nil
	}
	return &callContexts{run: r}
}

// openWatchContexts prepares watch's publishing, or says on stderr why
// not: the hook goes where the setup line of docs/watch.md sources it.
// A second watch of the user publishes nothing, and says so.
func openWatchContexts(env Env, cfg config.Config, home string) *callContexts {
	if cfg.Propagation != config.PropagateCall {
		return nil
	}
	base := cmp.Or(cfg.PropagationDir, toolctx.BaseDir(env.Getenv))
	opts := toolctx.Options{Base: base, Wait: cfg.PropagationWait}
	if !cfg.Quiet {
		opts.Late = func() {
			fmt.Fprintf(env.Stderr, "pi-otel: a bash call waited --propagation-wait (%v) for pi-otel and went on without its own trace context; more such calls are counted, not said\n", cfg.PropagationWait)
		}
	}
	s, err := toolctx.OpenSessions(opts, toolctx.HookPath(env.Getenv, home))
	if err != nil {
		if !cfg.Quiet {
			fmt.Fprintf(env.Stderr, "pi-otel: bash calls get no trace context of their own: %v\n", err)
		}
		return nil
	}
	return &callContexts{sessions: s}
}

// option registers the span processor that removes a call's entry when
// its span ends.
func (c *callContexts) option() []telemetry.Option {
	if c == nil {
		return nil
	}
	return []telemetry.Option{telemetry.WithSpanProcessor(func(metric.MeterProvider) (sdktrace.SpanProcessor, error) {
		if c.sessions != nil {
			return toolctx.Processor{Done: c.sessions.Done}, nil
		}
		return toolctx.Processor{Done: c.run.Done}, nil
	})}
}

// mapperOption has the stream's mapper hand over each bash call it reads,
// with its span's context: named from the run's key as soon as the
// assistant message that asks for the call ends (whether or not the
// caller samples it), before Pi starts the call's bash.
func (c *callContexts) mapperOption() []agentmap.Option {
	if c == nil {
		return nil
	}
	return []agentmap.Option{agentmap.WithBashCalls(func(call event.BashCall, sc trace.SpanContext) {
		c.run.Call(call.ID, call.Command, sc)
	})}
}

// env is what Pi's environment gets for the hook.
func (c *callContexts) env(getenv func(string) string) []string {
	if c == nil {
		return nil
	}
	return c.run.Env(getenv)
}

// bashAnswered ends the entry of a controller's bash command once Pi has
// answered it (the RPC tracker reads the response).
func (c *callContexts) bashAnswered(id string) { c.run.Done(toolctx.RPCBashID(id)) }

// controller reads one of an RPC controller's records: a bash command
// runs in Pi's bash, with the context Pi has, and must not wait for a
// tool call's. It is published before the record reaches Pi.
func (c *callContexts) controller(rec []byte) {
	if c == nil {
		return
	}
	if id, command, ok := toolctx.RPCBash(rec); ok {
		c.run.Keep(id, command)
	}
}

// followStream has the hooks' questions wait for Pi's stdout to be mapped
// up to the moment they ask (run and rpc: Pi's stream is read through
// toolctx.Stream).
func (c *callContexts) followStream(proc *launch.Process) {
	if c == nil {
		return
	}
	if f, ok := proc.Stdout().(*os.File); ok {
		if st, err := toolctx.NewStream(f); err == nil {
			proc.ReadStdoutThrough(st)
			c.run.SetSync(st.Sync)
			return
		}
	}
	// Questions are held until a sync is set: answer them at once.
	c.run.SetSync(func(context.Context, toolctx.Question) {})
}

// followFiles has the hooks' questions wait for their session file, when
// it is below one of dirs, to be mapped up to its size when they ask
// (the TUI under run, watch). A file elsewhere, or none (pi
// --no-session), is answered at once.
func (c *callContexts) followFiles(dirs []string) {
	if c == nil {
		return
	}
	c.files = newFileProgress(dirs)
	if c.sessions != nil {
		c.sessions.SetSync(c.files.sync)
	} else {
		c.run.SetSync(c.files.sync)
	}
}

// historyAge is how old a session file's newest entry may be for its calls
// to be published: far more than a hook waits, and than Pi takes from
// writing a long answer's entry to starting its tools.
const historyAge = 10 * time.Minute

// sessionCalls returns what publishes the bash calls of session file
// path, and notes how far it is mapped; nil with c. Its fm is to be set
// to the file's FileMapper, whose Config.BashCalls is its calls.
func (c *callContexts) sessionCalls(path string) *sessionCalls {
	if c == nil {
		return nil
	}
	return &sessionCalls{c: c, path: realPath(path)}
}

// sessionCalls publishes one session file's bash calls.
type sessionCalls struct {
	c    *callContexts
	path string
	fm   *session.FileMapper
}

// calls publishes the bash calls of a line fm has just read.
func (s *sessionCalls) calls(calls []event.BashCall) {
	fm := s.fm
	// History (watch's backfill, a resumed session) has no bash waiting.
	if last := fm.LastEntry(); !last.IsZero() && time.Since(last) > historyAge {
		return
	}
	for _, call := range calls {
		sc, ok := fm.ToolContext(call.ID)
		switch {
		case !ok:
		case s.c.sessions != nil:
			s.c.sessions.Call(fm.SessionID(), call.ID, call.Command, sc)
		default:
			s.c.run.Call(call.ID, call.Command, sc)
		}
	}
}

// caughtUp notes that the file is mapped up to end, the end of the line
// just mapped.
func (s *sessionCalls) caughtUp(end int64) {
	if s != nil && s.c.files != nil {
		s.c.files.reached(s.path, end)
	}
}

// missed is how many bash calls ran without their own context.
func (c *callContexts) missed() int64 {
	if c == nil {
		return 0
	}
	return c.misses.Total()
}

// close removes the run's directory, keeping the hooks' counts.
func (c *callContexts) close() {
	switch {
	case c == nil:
	case c.sessions != nil:
		c.misses = c.sessions.Close()
	default:
		c.misses = c.run.Close()
	}
}

// fileProgress is how far each session file is mapped, by its real path.
type fileProgress struct {
	dirs []string

	mu      sync.Mutex
	at      map[string]int64
	changed chan struct{}
}

func newFileProgress(dirs []string) *fileProgress {
	p := &fileProgress{at: map[string]int64{}, changed: make(chan struct{})}
	for _, d := range dirs {
		p.dirs = append(p.dirs, realPath(d))
	}
	return p
}

func (p *fileProgress) reached(path string, end int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if end > p.at[path] {
		p.at[path] = end
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// sync waits until q's session file is mapped up to its size now, when
// it is one of the files followed.
func (p *fileProgress) sync(ctx context.Context, q toolctx.Question) {
	if q.File == "" || !filepath.IsAbs(q.File) {
		return
	}
	path := realPath(q.File)
	if !p.follows(path) {
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	size := fi.Size()
	p.mu.Lock()
	for p.at[path] < size {
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		p.mu.Lock()
	}
	p.mu.Unlock()
}

// follows reports whether path is below one of the folders followed.
func (p *fileProgress) follows(path string) bool {
	return slices.ContainsFunc(p.dirs, func(d string) bool {
		rel, err := filepath.Rel(d, path)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	})
}

// realPath is path with its links resolved, or cleaned if it cannot be.
func realPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}
