package app

import (
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/event"
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
}

// openCallContexts opens the run's directory, or says on stderr why not.
func openCallContexts(env Env, cfg config.Config) *callContexts {
	if cfg.Propagation != config.PropagateCall {
		return nil
	}
	base := cfg.PropagationDir
	if base == "" {
		base = toolctx.BaseDir(env.Getenv)
	}
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
func openWatchContexts(env Env, cfg config.Config, home string) *callContexts {
	if cfg.Propagation != config.PropagateCall {
		return nil
	}
	base := cfg.PropagationDir
	if base == "" {
		base = toolctx.BaseDir(env.Getenv)
	}
	s, err := toolctx.OpenSessions(toolctx.Options{Base: base, Wait: cfg.PropagationWait}, toolctx.HookPath(env.Getenv, home))
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
// tool call's.
func (c *callContexts) controller(rec []byte) {
	if c == nil {
		return
	}
	if id, command, ok := toolctx.RPCBash(rec); ok {
		c.run.Keep(id, command)
	}
}

// historyAge is how old a session file's newest entry may be for its calls
// to be published: far more than a hook waits, and than Pi takes from
// writing a long answer's entry to starting its tools.
const historyAge = 10 * time.Minute

// sessionCalls returns what publishes the bash calls of session file
// path, and marks it read to its end; nil with c. Its fm is to be set to
// the file's FileMapper, whose Config.BashCalls is its calls.
func (c *callContexts) sessionCalls(path string) *sessionCalls {
	if c == nil {
		return nil
	}
	return &sessionCalls{c: c, path: path}
}

// sessionCalls publishes one session file's bash calls.
type sessionCalls struct {
	c    *callContexts
	path string
	fm   *session.FileMapper
	// size is the file's size when last looked at: a line ending before
	// it is not the last.
	size int64
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

// caughtUp marks the file as read when the line ending at end was its
// last. It looks at the file only when end reaches the size seen last:
// a file Pi appends to only grows, and one rewritten smaller is read
// again from its start, by a new FileMapper.
func (s *sessionCalls) caughtUp(end int64) {
	if s == nil || end < s.size {
		return
	}
	id := s.fm.SessionID()
	if id == "" {
		return
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return
	}
	s.size = fi.Size()
	if end < s.size {
		return
	}
	if s.c.sessions != nil {
		// A file nobody wrote lately (watch's backfill) gets no directory
		// of its own: no Pi is running its bash. Resumed, its next entry
		// is new and makes one.
		if time.Since(fi.ModTime()) <= historyAge {
			s.c.sessions.Seen(id, fi.ModTime())
		}
		return
	}
	s.c.run.Seen(id, fi.ModTime())
}

// started names Pi's process once it runs.
func (c *callContexts) started(pid int) {
	if c != nil {
		c.run.SetPi(pid)
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
