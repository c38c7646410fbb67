package mapper

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/piconv"
)

// maxToolUpdateEvents caps the span events a chatty tool can add; the total
// is still counted in pi.tool.updates.
const maxToolUpdateEvents = 16

func (m *Mapper) toolStart(ev *event.Event, at time.Time) {
	r := m.ensureRun(at, "tool_execution_start")
	if _, dup := r.tools[ev.ToolCallID]; dup {
		m.anomaly("duplicate toolCallId")
		m.endTool(ev.ToolCallID, at, piconv.UnfinishedKey.Bool(true))
	}
	name := piconv.SpanTool.Name(ev.ToolName)
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(ev.ToolName),
		semconv.GenAIToolCallID(ev.ToolCallID),
		semconv.GenAIToolTypeKey.String(piconv.ToolTypeFunction),
	}
	if c := m.cfg.content; c != nil && len(ev.Args) > 0 {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(c.ToolArguments(ev.Args)))
	}
	s := m.start(r.container().ctx, name, trace.SpanKindInternal, at, attrs...)
	r.tools[ev.ToolCallID] = &s
	r.toolOrder = append(r.toolOrder, ev.ToolCallID)
	r.toolCalls++
	r.turnToolCalls++
}

func (m *Mapper) toolUpdate(ev *event.Event, at time.Time) {
	r := m.run
	if r == nil {
		return
	}
	s, ok := r.tools[ev.ToolCallID]
	if !ok {
		m.anomaly("tool_execution_update without start")
		return
	}
	n := r.toolUpdate[ev.ToolCallID]
	r.toolUpdate[ev.ToolCallID] = n + 1
	if n < maxToolUpdateEvents {
		s.AddEvent(piconv.EventToolUpdate, trace.WithTimestamp(at))
	}
}

func (m *Mapper) toolEnd(ev *event.Event, at time.Time) {
	r := m.ensureRun(at, "tool_execution_end")
	if _, ok := r.tools[ev.ToolCallID]; !ok {
		// Keep the tool visible: place it where its duration says it ran.
		m.anomaly("tool_execution_end without start")
		start := at
		if ev.DurationMs != nil {
			start = at.Add(-time.Duration(*ev.DurationMs * float64(time.Millisecond)))
		}
		if p := r.container().start; start.Before(p) {
			start = p
		}
		m.toolStart(&event.Event{ToolCallID: ev.ToolCallID, ToolName: ev.ToolName}, start)
		r.tools[ev.ToolCallID].SetAttributes(piconv.OrphanEndKey.Bool(true))
	}
	attrs := []attribute.KeyValue{}
	if ev.DurationMs != nil {
		attrs = append(attrs, piconv.ToolDurationMsKey.Float64(*ev.DurationMs))
	}
	if c := m.cfg.content; c != nil && len(ev.Result) > 0 {
		attrs = append(attrs, semconv.GenAIToolCallResultKey.String(c.ToolResult(ev.Result)))
	}
	if ev.IsError {
		r.toolErrors++
		attrs = append(attrs, semconv.ErrorTypeKey.String(piconv.ToolErrorType))
		r.tools[ev.ToolCallID].SetStatus(codes.Error, "tool reported an error")
	}
	m.endTool(ev.ToolCallID, at, attrs...)
}

func (m *Mapper) endTool(id string, at time.Time, attrs ...attribute.KeyValue) {
	r := m.run
	s := r.tools[id]
	n := r.toolUpdate[id]
	s.SetAttributes(append(attrs, piconv.ToolUpdatesKey.Int(n))...)
	s.End(trace.WithTimestamp(at))
	delete(r.tools, id)
	delete(r.toolUpdate, id)
	for i, open := range r.toolOrder {
		if open == id {
			r.toolOrder = append(r.toolOrder[:i], r.toolOrder[i+1:]...)
			break
		}
	}
}
