package app

import (
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/config"
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
	// src names a call's span as soon as its assistant message is seen,
	// when the mapper can; otherwise the span's start resolves it.
	src    toolctx.ContextSource
	misses toolctx.Misses
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

// option registers the span processor that resolves a call when its span
// starts.
func (c *callContexts) option() []telemetry.Option {
	if c == nil {
		return nil
	}
	return []telemetry.Option{telemetry.WithSpanProcessor(func(metric.MeterProvider) (sdktrace.SpanProcessor, error) {
		if c.sessions != nil {
			return toolctx.Processor{Done: c.sessions.Done}, nil
		}
		return toolctx.Processor{Run: c.run}, nil
	})}
}

// attach lets the mapper name calls as soon as their assistant message is
// seen (their span ids derive from the run's key, whether or not the
// caller samples them), and returns c.
func (c *callContexts) attach(p *pipeline) *callContexts {
	if c == nil {
		return nil
	}
	c.src = p.mapper
	p.calls = c
	return c
}

// env is what Pi's environment gets for the hook.
func (c *callContexts) env(getenv func(string) string) []string {
	if c == nil {
		return nil
	}
	return c.run.Env(getenv)
}

// record reads one of Pi's records after the mapper has.
func (c *callContexts) record(rec []byte) {
	if c == nil {
		return
	}
	c.run.Record(rec, c.src)
	if id, _, response, ok := toolctx.RPCBash(rec); ok && response {
		c.run.Done(id)
	}
}

// controller reads one of an RPC controller's records: a bash command
// runs in Pi's bash, with the context Pi has, and must not wait for a
// tool call's.
func (c *callContexts) controller(rec []byte) {
	if c == nil {
		return
	}
	if id, command, response, ok := toolctx.RPCBash(rec); ok && !response {
		c.run.Keep(id, command)
	}
}

// historyAge is how old a session file's newest entry may be for its calls
// to be published: far more than a hook waits, and than Pi takes from
// writing a long answer's entry to starting its tools.
const historyAge = 10 * time.Minute

// session publishes the bash calls a session file's line asks for, once
// fm has read it; calls is toolctx.Calls of it.
func (c *callContexts) session(calls []toolctx.Call, fm *session.FileMapper) {
	if c == nil || len(calls) == 0 {
		return
	}
	// History (watch's backfill, a resumed session) has no bash waiting.
	if last := fm.LastEntry(); !last.IsZero() && time.Since(last) > historyAge {
		return
	}
	if c.sessions != nil {
		c.sessions.Publish(fm.SessionID(), calls, fm)
		return
	}
	c.run.Publish(calls, fm)
}

// caughtUp marks session file path as read when the line ending at end
// was its last.
func (c *callContexts) caughtUp(path, sessionID string, end int64) {
	if c == nil || sessionID == "" {
		return
	}
	fi, err := os.Stat(path)
	if err != nil || end < fi.Size() {
		return
	}
	if c.sessions != nil {
		c.sessions.Seen(sessionID, fi.ModTime())
		return
	}
	c.run.Seen(sessionID, fi.ModTime())
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
