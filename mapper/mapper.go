// Package mapper turns the records of Pi's JSON event stream (`pi --mode
// json`, or an RPC session's output) into OpenTelemetry spans, for a
// program that embeds it: records go in with the time each arrived, spans
// come out through the trace.TracerProvider it is given. It knows nothing
// of processes, files or exporters.
//
// docs/span-model.md describes the spans; package vocab names every
// span, attribute and value they carry. pi-otel itself runs the same
// state machine (internal/agentmap) with seams for RPC tracing and
// session files that this package leaves out.
package mapper

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// ScopeName is the instrumentation scope of every span the mapper makes.
const ScopeName = "github.com/pi-otel/pi-otel/mapper" // agentmap's, spelt out for the reader; mapper_test checks it

// Mapper maps one stream. It is not safe for concurrent use: feed it from
// one goroutine.
type Mapper struct {
	m *agentmap.Mapper
}

// New returns a Mapper that writes spans through tp.
func New(tp trace.TracerProvider, opts ...Option) *Mapper {
	var c config
	for _, o := range opts {
		o.apply(&c)
	}
	return &Mapper{m: agentmap.New(tp, c.inner...)}
}

// Record decodes one record (a line of the stream without its LF) and
// applies it at time at.
//
// A record that is not a Pi record (not JSON, not an object, no type) is
// ignored and its error returned. A record of a known type with a field
// of an unexpected shape is still applied, since it marks its place in
// the lifecycle, and the error says which field was dropped. A line that
// holds several records, written with no LF between them, is applied as
// those records; the error is then the first of theirs, or of the bytes
// between them that are none.
func (m *Mapper) Record(line []byte, at time.Time) error { return m.m.Record(line, at) }

// Ending says why a stream stopped without settling.
type Ending struct {
	Reason   vocab.EndReason // vocab.EndSignal, EndExit or EndEOF
	ExitCode int             // set with EndSignal and EndExit
	Signal   string          // e.g. "SIGTERM", with EndSignal
}

// Close ends a stream that stopped without settling: every open span
// ends, innermost first, and the root records why. A stream that settled
// has nothing open, and Close does nothing.
func (m *Mapper) Close(end Ending, at time.Time) { m.m.Close(agentmap.Ending(end), at) }

// Stats counts what the mapper saw. Anomalies are tolerated, never fatal.
type Stats struct {
	Events  int64 // records applied
	Unknown int64 // records of a type the mapper does not know
	Roots   int64 // runs opened
	// ToolsEvicted counts open tools ended early because more than the
	// cap (WithMaxOpenTools) were open at once.
	ToolsEvicted int64
	// Anomalies counts records out of place, by kind.
	Anomalies map[string]int64
}

// Stats returns a copy of the counters.
func (m *Mapper) Stats() Stats { return Stats(m.m.Stats()) }

// SessionID is the id from the stream's session header, once seen.
func (m *Mapper) SessionID() string { return m.m.SessionID() }

// Active reports whether a run is open, that is whether Close would end
// anything.
func (m *Mapper) Active() bool { return m.m.Active() }

// Content is what the mapper needs to capture message content. Leaving it
// out (the default) keeps every prompt, argument and output out of spans.
type Content interface {
	// Scrub redacts and truncates one captured value.
	Scrub(s string) string
	// InputMessages, OutputMessages and SystemInstructions render Pi
	// messages as the GenAI conventions' JSON attribute values.
	InputMessages(msgs [][]byte) string
	OutputMessages(msgs [][]byte) string
	SystemInstructions(msg []byte) string
	// ToolArguments and ToolResult render a tool call's arguments and
	// result.
	ToolArguments(args []byte) string
	ToolResult(result []byte) string
}

// Option configures a Mapper, in the OpenTelemetry SDK's style.
type Option interface {
	apply(*config)
}

type config struct{ inner []agentmap.Option }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func wrap(o agentmap.Option) Option {
	return optionFunc(func(c *config) { c.inner = append(c.inner, o) })
}

// WithParent makes every root a child of the span in ctx, e.g. the caller's
// TRACEPARENT, so that a CI job's trace contains the agent.
func WithParent(ctx context.Context) Option { return wrap(agentmap.WithParent(ctx)) }

// WithInexactTimes says record times are made up (the next millisecond
// for each, say) rather than observed. Spans keep their times, but
// gen_ai.response.time_to_first_chunk, which no record carries, is left out
// instead of reported wrong.
func WithInexactTimes() Option { return wrap(agentmap.WithInexactTimes()) }

// WithContent turns on opt-in content capture through c.
func WithContent(c Content) Option { return wrap(agentmap.WithContent(c)) }

// WithMaxOpenTools bounds the tools open at once (default 1024). Past it
// the oldest is ended unfinished with pi.end_reason=evicted and counted in
// Stats.ToolsEvicted and on the root (pi.tools_evicted).
func WithMaxOpenTools(n int) Option { return wrap(agentmap.WithMaxOpenTools(n)) }
