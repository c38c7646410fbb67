package toolctx

import (
	"context"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Processor resolves each bash call's entry when its execute_tool span
// starts, and removes it when the span ends: in a stream (run --mode
// json, rpc) that span starts at tool_execution_start, which Pi writes
// before it starts bash.
// With Done set (watch, whose spans start after a call has ended), it
// only removes entries.
type Processor struct {
	Run  *Run
	Done func(callID string)
}

var _ sdktrace.SpanProcessor = Processor{}

// OnStart resolves the call of an execute_tool span.
func (p Processor) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if id := toolCallID(s); id != "" && p.Run != nil {
		p.Run.Resolve(id, s.SpanContext())
	}
}

// OnEnd removes the call's entry.
func (p Processor) OnEnd(s sdktrace.ReadOnlySpan) {
	id := toolCallID(s)
	switch {
	case id == "":
	case p.Done != nil:
		p.Done(id)
	default:
		p.Run.Done(id)
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
