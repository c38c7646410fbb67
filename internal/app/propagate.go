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
	if cfg.Propagation != config.PropagateCall || !sessionCalls() {
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

// attach lets the mapper name calls early, when it can, and returns c, or
// nil when calls cannot be resolved: under an unsampled caller no span is
// recorded, so only a mapper that names calls itself resolves them, and
// without one the run's context (the caller's, unsampled) is as good.
func (c *callContexts) attach(p *pipeline) *callContexts {
	if c == nil {
		return nil
	}
	if src, ok := any(p.mapper).(toolctx.ContextSource); ok {
		c.src = src
	}
	if c.src == nil && p.parent.IsValid() && !p.parent.IsSampled() {
		c.run.Close()
		return nil
	}
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

// sessionCalls says whether a session file's reader names calls early,
// which tracing Pi's TUI per call needs.
func sessionCalls() bool {
	_, ok := any((*session.FileMapper)(nil)).(toolctx.ContextSource)
	return ok
}

// session publishes the bash calls a session file's line asks for, once
// the reader (a FileMapper) has read it; calls is toolctx.Calls of it.
func (c *callContexts) session(calls []toolctx.Call, reader any) {
	if c == nil || len(calls) == 0 {
		return
	}
	src, ok := reader.(toolctx.ContextSource)
	if !ok {
		return
	}
	// History (watch's backfill, a resumed session) has no bash waiting.
	if r, ok := reader.(interface{ LastEntry() time.Time }); ok {
		if last := r.LastEntry(); !last.IsZero() && time.Since(last) > historyAge {
			return
		}
	}
	if c.sessions != nil {
		if r, ok := reader.(interface{ SessionID() string }); ok {
			c.sessions.Publish(r.SessionID(), calls, src)
		}
		return
	}
	c.run.Publish(calls, src)
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
