package toolctx

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Processor removes each bash call's entry when its execute_tool span
// ends, however it ends (its tool_execution_end, a run cut short, a tool
// evicted). Done is Run.Done, or Sessions.Done for watch. Publishing is
// not its part: the mapper names a call's span as it reads the records
// that ask for the call (Run.Call), the one that opens the span too.
type Processor struct {
	Done func(callID string)
}

var _ sdktrace.SpanProcessor = Processor{}

// OnStart does nothing: the span's call is published already.
func (Processor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd removes the call's entry.
func (p Processor) OnEnd(s sdktrace.ReadOnlySpan) {
	if id := toolCallID(s); id != "" {
		p.Done(id)
	}
}

// Shutdown does nothing: the run's directory is removed by Run.Close.
func (Processor) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing.
func (Processor) ForceFlush(context.Context) error { return nil }

// toolCallID is the gen_ai.tool.call.id of an execute_tool span, or "".
func toolCallID(s sdktrace.ReadOnlySpan) string {
	var id string
	tool := false
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case semconv.GenAIOperationNameKey:
			tool = kv.Value.AsString() == semconv.GenAIOperationNameExecuteTool.Value.AsString()
		case semconv.GenAIToolCallIDKey:
			id = kv.Value.AsString()
		}
	}
	if !tool {
		return ""
	}
	return id
}
