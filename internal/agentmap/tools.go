package agentmap

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// maxToolUpdateEvents caps the span events a chatty tool can add; the total
// is still counted in pi.tool.updates.
const maxToolUpdateEvents = 16

// evictedMemory is how many times the cap of evicted tool ids the mapper
// remembers, to drop their late records rather than trace a call twice:
// enough for a burst of parallel tools far past the cap, in a few MB.
const evictedMemory = 16

func (m *Mapper) toolStart(ev *event.Event, at time.Time) *tool {
	r := m.ensureRun(at, "tool_execution_start")
	if old := r.tools.get(ev.ToolCallID); old != nil {
		m.anomaly("duplicate toolCallId")
		m.endTool(old, at, vocab.UnfinishedKey.Bool(true))
	}
	var buf [8]attribute.KeyValue // start copies them
	attrs := append(buf[:0],
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(ev.ToolName),
		semconv.GenAIToolCallID(ev.ToolCallID),
		semconv.GenAIToolTypeKey.String(vocab.ToolTypeFunction),
	)
	attrs = m.conv.toolAttrs(ev.ToolName, attrs)
	if c := m.cfg.content; c != nil && len(ev.Args) > 0 {
		attrs = append(attrs, semconv.GenAIToolCallArgumentsKey.String(c.ToolArguments(ev.Args)))
	}
	parent := r.container().ctx
	if id := ev.ParentToolCallID; id != "" {
		if p := r.tools.get(id); p != nil {
			// A call the open tool made (ctx.executeTool): below it, as a
			// session file's nestedCalls record of it is.
			parent = p.ctx
			attrs = append(attrs, vocab.NestedCallKey.Bool(true))
		}
	}
	n := r.toolSeen[ev.ToolCallID]
	r.toolSeen[ev.ToolCallID] = n + 1
	t := &tool{id: ev.ToolCallID, skill: ev.Skill}
	m.start(&t.span, parent, ToolPath(ev.ToolCallID, n), m.spanName(vocab.SpanTool, ev.ToolName), trace.SpanKindInternal, at, attrs...)
	r.tools.add(t)
	r.toolCalls++
	r.turnToolCalls++
	for r.tools.len() > m.cfg.maxTools {
		old := r.tools.oldest
		m.stats.ToolsEvicted++
		r.toolsEvicted++
		r.evicted.add(old.id, evictedMemory*m.cfg.maxTools)
		m.endTool(old, at, vocab.UnfinishedKey.Bool(true), vocab.EndEvicted.Attr())
	}
	return t
}

func (m *Mapper) toolUpdate(ev *event.Event, at time.Time) {
	r := m.run
	if r == nil {
		return
	}
	t := r.tools.get(ev.ToolCallID)
	if t == nil {
		if _, evicted := r.evicted.at[ev.ToolCallID]; !evicted {
			m.anomaly("tool_execution_update without start")
		}
		return
	}
	if t.updates < maxToolUpdateEvents && t.rec {
		t.AddEvent(vocab.EventToolUpdate, trace.WithTimestamp(at))
	}
	t.updates++
}

func (m *Mapper) toolEnd(ev *event.Event, at time.Time, res *nested.Result) {
	r := m.ensureRun(at, "tool_execution_end")
	t := r.tools.get(ev.ToolCallID)
	if t == nil && r.evicted.take(ev.ToolCallID) {
		// Its span ended when the cap evicted it; a second span for the
		// same call would count it twice.
		m.anomaly("tool_execution_end after eviction")
		if ev.IsError {
			r.toolErrors++
		}
		return
	}
	if t == nil {
		// Keep the tool visible: place it where its duration says it ran.
		m.anomaly("tool_execution_end without start")
		start := at
		if ev.DurationMs != nil {
			start = at.Add(-time.Duration(*ev.DurationMs * float64(time.Millisecond)))
		}
		if p := r.container().start; start.Before(p) {
			start = p
		}
		t = m.toolStart(&event.Event{ToolCallID: ev.ToolCallID, ToolName: ev.ToolName}, start)
		t.SetAttributes(vocab.OrphanEndKey.Bool(true))
	}
	if ev.IsError {
		r.toolErrors++
	}
	// What the call did, built only for a span that records it; what the
	// run learns of it (a skill loaded, nested work) counts either way.
	var attrs []attribute.KeyValue
	if t.rec {
		attrs = toolEndAttrs(m.cfg.content, ev)
		if ev.IsError {
			t.SetStatus(codes.Error, "tool reported an error")
		}
	}
	attrs = toolSkill(r, t, ev.IsError, attrs)
	attrs, at = m.nestedTool(t, at, attrs, res)
	m.endTool(t, at, attrs...)
}

// toolEndAttrs are the attributes a tool's end gives its span.
func toolEndAttrs(c Content, ev *event.Event) []attribute.KeyValue {
	attrs := []attribute.KeyValue{}
	if ev.DurationMs != nil {
		attrs = append(attrs, vocab.ToolDurationMsKey.Float64(*ev.DurationMs))
	}
	if c != nil && len(ev.Result) > 0 {
		attrs = append(attrs, semconv.GenAIToolCallResultKey.String(c.ToolResult(ev.Result)))
	}
	if ev.IsError {
		attrs = append(attrs, semconv.ErrorTypeKey.String(vocab.ToolErrorType))
	}
	return attrs
}

func (m *Mapper) endTool(t *tool, at time.Time, attrs ...attribute.KeyValue) {
	m.run.tools.remove(t)
	if t.rec {
		t.SetAttributes(append(attrs, vocab.ToolUpdatesKey.Int(t.updates))...)
	}
	t.finish(at)
}
