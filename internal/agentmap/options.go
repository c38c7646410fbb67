package agentmap

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/option"
)

// Content is what the mapper needs to capture message content. Leaving it
// nil (the default) keeps every prompt, argument and output out of spans.
type Content interface {
	// Scrub redacts and truncates one captured value.
	Scrub(s string) string
	// Messages renders Pi messages as a GenAI-convention JSON attribute value.
	InputMessages(msgs [][]byte) string
	OutputMessages(msgs [][]byte) string
	SystemInstructions(msg []byte) string
	ToolArguments(args []byte) string
	ToolResult(result []byte) string
}

type config struct {
	parent  context.Context
	content Content
	// inexact: event times are reconstructed (replay), so intervals no
	// record measures, like time to first chunk, are not reported.
	inexact  bool
	maxTools int
	chunks   ChunkObserver
	// bashCalls, if set, is told of each bash call (WithBashCalls).
	bashCalls func(call event.BashCall, sc trace.SpanContext)
}

// defaultMaxOpenTools is far above what a model fans out in one turn, and
// bounds what a stream that never ends its tools can hold.
const defaultMaxOpenTools = 1024

// WithMaxOpenTools bounds the tools open at once (default 1024). Past it
// the oldest is ended unfinished with pi.end_reason=evicted and counted in
// Stats.ToolsEvicted and on the root (pi.tools_evicted), as RPC tracing
// bounds its pending commands. The late records of the last 16n evicted
// tools are recognised and dropped (counted as an anomaly); an older one's
// end becomes an orphan end (pi.orphan_end).
func WithMaxOpenTools(n int) Option {
	return option.Func[config](func(c *config) {
		if n > 0 {
			c.maxTools = n
		}
	})
}

// Option configures a Mapper, in the OpenTelemetry SDK's style and with
// internal/option, as every internal package's; package mapper wraps it
// in an Option of its own, so that its API names no internal type.
type Option = option.Option[config]

// WithParent makes every root a child of the span in ctx, e.g. the caller's
// TRACEPARENT, so that a CI job's trace contains the agent.
func WithParent(ctx context.Context) Option {
	return option.Func[config](func(c *config) { c.parent = ctx })
}

// WithInexactTimes says event times are reconstructed from the stream, as
// replay does, rather than observed. Spans keep their times, but
// gen_ai.response.time_to_first_chunk, which no record carries, is left out
// instead of reported as zero.
func WithInexactTimes() Option {
	return option.Func[config](func(c *config) { c.inexact = true })
}

// ChunkObserver is handed the time between consecutive output chunks of a
// model call, the GenAI conventions' time per output chunk. A span would
// need a value per chunk to carry it, so the mapper hands each on as it
// measures it, from the times its inputs carry.
type ChunkObserver interface {
	// OutputChunk is called for each output chunk after a call's first,
	// with ctx holding the call's span, the time since the chunk before,
	// and the call's gen_ai.provider.name and gen_ai.request.model ("" if
	// the call named none).
	OutputChunk(ctx context.Context, gap time.Duration, provider, model string)
}

// WithChunkObserver hands o the time between the output chunks (the
// *_delta message_update records) of every model call, as they arrive.
// With WithInexactTimes nothing is handed on: rebuilt times put every
// update of a call at one instant.
func WithChunkObserver(o ChunkObserver) Option {
	return option.Func[config](func(c *config) { c.chunks = o })
}

// WithBashCalls hands fn each bash call an event asks for (its
// Event.BashCalls), once the mapper has handled the event, with the span
// context the call's execute_tool span has, or will have when it starts
// (ToolContext); a call it cannot name a span for is left out. An
// assistant message names its calls at its end, before Pi runs them, and
// a tool_execution_start names its call again with its span open. The
// event's feeder must decode the calls (ReadsBashCalls). The command is
// fn's alone: no span gets it.
func WithBashCalls(fn func(call event.BashCall, sc trace.SpanContext)) Option {
	return option.Func[config](func(c *config) { c.bashCalls = fn })
}

// WithContent turns on opt-in content capture.
func WithContent(c Content) Option {
	return option.Func[config](func(cfg *config) { cfg.content = c })
}
