package agentmap

import (
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/content/genaimsg"
	"github.com/pi-otel/pi-otel/internal/errtext"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Nested runs: a tool that ran other agents (Pi's subagent extension) hands
// their messages back in its result, and package nested reads them. They
// become invoke_agent spans below the tool's execute_tool span when the tool
// ends, live or replayed, timed by the children's own messages.

// nestedTotals is a run's nested work, for its root.
type nestedTotals struct {
	runs, failed, dropped, clamped int
	usage                          event.Usage
}

// nestedTool traces what the result of tool t, ending at at, carries, and
// returns t's attributes with the nested totals, and when t ends: at, or
// later if its children's own times end later (a replayed stream knows a
// tool's duration but only approximates its start), so that t contains
// them. res is what the decode stage read of the result (Input.Nested).
func (m *Mapper) nestedTool(t *tool, at time.Time, attrs []attribute.KeyValue, res *nested.Result) ([]attribute.KeyValue, time.Time) {
	if res.Empty() {
		return attrs, at
	}
	r := m.run
	w := nestedWriter{m: m, buf: m.nestedBuf}
	w.result(&t.span, res, at)
	m.nestedBuf = w.buf[:0]
	total := res.Total()
	r.usage.Add(&total)
	if r.nested == nil {
		r.nested = &nestedTotals{}
	}
	n := r.nested
	n.usage.Add(&total)
	n.runs += w.runs
	n.failed += w.failed
	n.dropped += res.Dropped.Total()
	n.clamped += w.clamped
	if d := res.Dropped.Total(); d > 0 {
		m.stats.Anomalies["nested values dropped"] += int64(d)
		attrs = append(attrs, vocab.NestedDroppedKey.Int(d))
	}
	if u := res.Dropped.UnreadFiles; u > 0 {
		// The result's copy of the messages stood in: nothing lost.
		m.stats.Anomalies["nested session files unread"] += int64(u)
	}
	if n := res.Dropped.Repeated; n > 0 {
		// A tool result given twice in a child's messages: traced once.
		m.stats.Anomalies["nested tool results repeated"] += int64(n)
	}
	if w.clamped > 0 {
		m.stats.Anomalies["nested span times clamped"] += int64(w.clamped)
		attrs = append(attrs, vocab.NestedClampedKey.Int(w.clamped))
	}
	if res.Usage != nil {
		// Pi's generic field: model work the tool itself reports.
		attrs = appendUsageAttrs(attrs, res.Usage)
		attrs = append(attrs, vocab.CostTotalKey.Float64(res.Usage.Cost.Total))
	}
	if res.Mode != "" {
		attrs = append(attrs, vocab.NestedModeKey.String(shortName(res.Mode)))
	}
	if w.runs > 0 {
		attrs = append(attrs, vocab.NestedRunsKey.Int(w.runs), vocab.NestedFailedRunsKey.Int(w.failed),
			vocab.NestedCostTotalKey.Float64(total.Cost.Total))
	}
	if w.end.After(at) {
		at = w.end
	}
	return attrs, at
}

// nestedAttrs are the root's nested totals, when there were any.
func (n *nestedTotals) attrs() []attribute.KeyValue {
	if n == nil || n.runs == 0 && n.dropped == 0 && n.usage == (event.Usage{}) {
		return nil
	}
	attrs := []attribute.KeyValue{
		vocab.NestedRunsKey.Int(n.runs), vocab.NestedFailedRunsKey.Int(n.failed),
		vocab.NestedCostTotalKey.Float64(n.usage.Cost.Total),
	}
	if n.dropped > 0 {
		attrs = append(attrs, vocab.NestedDroppedKey.Int(n.dropped))
	}
	if n.clamped > 0 {
		attrs = append(attrs, vocab.NestedClampedKey.Int(n.clamped))
	}
	return attrs
}

// nestedWriter emits one tool result's nested spans.
type nestedWriter struct {
	m                     *Mapper
	runs, failed, clamped int
	end                   time.Time // the latest end of a span written
	// buf holds the attributes of the span being started: the SDK copies
	// them, so one slice serves every span (a history full of subagent
	// results makes millions).
	buf []attribute.KeyValue
	// names are the last chat and tool span names made, and what from: a
	// child's calls repeat one model and a few tools.
	chatModel, chatName, toolName, toolSpan string
}

// attrs returns the empty attribute buffer.
func (w *nestedWriter) attrs() []attribute.KeyValue {
	if w.buf == nil {
		w.buf = make([]attribute.KeyValue, 0, 32)
	}
	return w.buf[:0]
}

// start starts a span with attrs, which it keeps as the buffer. Its path
// is base (parent's, written out once for all its children) and then what
// and i: where it sits in the result.
func (w *nestedWriter) start(parent *span, base, what string, i int, name string, kind trace.SpanKind, at time.Time, attrs []attribute.KeyValue) *span {
	path := spanid.Path{Base: base, Kind: what, N: i}
	s := new(span)
	w.m.start(s, parent.ctx, path, name, kind, at, attrs...)
	w.buf = attrs[:0]
	return s
}

func (w *nestedWriter) chatSpanName(model string) string {
	if model != w.chatModel || w.chatName == "" {
		w.chatModel, w.chatName = model, vocab.SpanChat.Name(shortName(model))
	}
	return w.chatName
}

func (w *nestedWriter) toolSpanName(tool string) string {
	if tool != w.toolName || w.toolSpan == "" {
		w.toolName, w.toolSpan = tool, vocab.SpanTool.Name(shortName(tool))
	}
	return w.toolSpan
}

// nestedSlack is how far a child's time may lie outside its parent's
// span and be kept: a replayed stream knows a tool's duration but only
// approximates its start, so the child's own times can run past the tool's
// end by the tool's start-up. A time further out is bogus (a hostile
// result, a broken clock) and must not stretch the trace.
const nestedSlack = 5 * time.Second

// within places t in [lo, hi + nestedSlack], counting a time that was far
// outside. A span must not start before its parent, which has started; a
// parent still open ends no earlier than its children.
func (w *nestedWriter) within(t, lo, hi time.Time) time.Time {
	switch {
	case t.IsZero():
		return lo
	case t.Before(lo):
		if t.Before(lo.Add(-nestedSlack)) {
			w.clamped++
		}
		return lo
	case t.After(hi.Add(nestedSlack)):
		w.clamped++
		return hi
	}
	return t
}

func (w *nestedWriter) ended(t time.Time) {
	if t.After(w.end) {
		w.end = t
	}
}

// result emits the spans of res below parent, which ends at end.
func (w *nestedWriter) result(parent *span, res *nested.Result, end time.Time) {
	lo, hi := parent.start, end
	if hi.Before(lo) {
		hi = lo
	}
	base := parent.path.String()
	for i := range res.Calls {
		w.call(parent, base, i, &res.Calls[i], lo, hi)
	}
	for j, run := range res.Runs {
		w.run(parent, base, j, run, lo, hi)
	}
}

// call is a nestedCalls record: its name, status and duration, from the
// start of the calling tool (the record has no start time).
func (w *nestedWriter) call(parent *span, base string, i int, c *nested.Call, lo, hi time.Time) {
	m := w.m
	attrs := append(w.attrs(),
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(shortName(c.Name)),
		semconv.GenAIToolCallID(shortName(c.ID)),
		semconv.GenAIToolTypeKey.String(vocab.ToolTypeFunction),
		vocab.NestedCallKey.Bool(true),
		vocab.NestedCallStatusKey.String(shortName(c.Status)),
	)
	end := lo
	if c.DurationMs != nil {
		attrs = append(attrs, vocab.ToolDurationMsKey.Float64(*c.DurationMs))
		end = w.within(lo.Add(nested.Millis(*c.DurationMs)), lo, hi)
	}
	w.ended(end)
	s := w.start(parent, base, "call", i, w.toolSpanName(c.Name), trace.SpanKindInternal, lo, attrs)
	// The parent's own tool calls, as a live stream counts them.
	m.run.toolCalls++
	switch {
	case c.Status == "error":
		m.run.toolErrors++
		if s.rec {
			s.SetAttributes(semconv.ErrorTypeKey.String(vocab.ToolErrorType))
			s.SetStatus(codes.Error, m.errorText(c.Error))
		}
	case c.Status == "unfinished" && s.rec:
		s.SetAttributes(vocab.UnfinishedKey.Bool(true))
	}
	s.finish(end)
}

// run emits one nested agent run and what it did.
func (w *nestedWriter) run(parent *span, base string, j int, run *nested.Run, lo, hi time.Time) {
	m := w.m
	w.runs++
	start, end := w.within(run.Start, lo, hi), w.within(run.End, lo, hi)
	if run.Start.IsZero() {
		end = hi // nothing timed: the run is known to lie within the tool
	}
	chats, tools, toolErrors := 0, 0, 0
	for i := range run.Items {
		switch it := &run.Items[i]; {
		case it.Kind == nested.Chat:
			chats++
		case it.IsError:
			tools++
			toolErrors++
		default:
			tools++
		}
	}
	// All attributes at the start, in one slice: a span's SetAttributes
	// grows its slice each time.
	attrs := append(w.attrs(),
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(shortName(run.Agent)),
		vocab.NestedDepthKey.Int(run.Depth),
		vocab.NestedIndexKey.Int(run.Index),
		vocab.CostTotalKey.Float64(run.Usage.Cost.Total),
		// As on the root: one model call per turn.
		vocab.TurnsKey.Int(chats), vocab.ToolCallsKey.Int(tools), vocab.ToolErrorsKey.Int(toolErrors),
	)
	attrs = appendUsageAttrs(attrs, &run.Usage)
	if run.Provider != "" {
		attrs = appendProviderAttrs(attrs, shortName(run.Provider))
	}
	if run.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(shortName(run.Model)))
	}
	if run.StopReason != "" {
		attrs = append(attrs, vocab.StopReasonKey.String(shortName(run.StopReason)))
	}
	if run.ExitCode != nil {
		attrs = append(attrs, vocab.NestedExitCodeKey.Int(*run.ExitCode))
	}
	if run.Session != "" {
		attrs = append(attrs, vocab.NestedSessionIDKey.String(shortName(run.Session)))
	}
	if run.FromSummary {
		attrs = append(attrs, vocab.NestedUsageFromKey.String(vocab.NestedUsageFromSummary))
	}
	if c := m.cfg.content; c != nil && run.Task != "" {
		attrs = append(attrs, vocab.NestedTaskKey.String(c.Scrub(run.Task)))
	}
	failed := run.Failed()
	if failed {
		attrs = append(attrs, semconv.ErrorTypeKey.String(runErrorType(run)))
	}
	s := w.start(parent, base, "agent", j, vocab.SpanAgent.Name(shortName(run.Agent)), trace.SpanKindInternal, start, attrs)
	if failed {
		w.failed++
		if s.rec {
			s.SetStatus(codes.Error, m.runErrorText(run))
		}
	}
	itemBase := s.path.String()
	for i := range run.Items {
		w.item(s, itemBase, i, run, &run.Items[i], start, end)
	}
	w.ended(end)
	s.finish(end)
}

func runErrorType(run *nested.Run) string {
	if run.ErrorMessage != "" {
		return errtext.Class(run.ErrorMessage)
	}
	return vocab.NestedErrorType
}

// runErrorText says why a child failed, under the safe-token rule.
func (m *Mapper) runErrorText(run *nested.Run) string {
	switch {
	case run.ErrorMessage != "":
		return m.errorText(run.ErrorMessage)
	case run.ExitCode != nil && *run.ExitCode != 0:
		return "exit code " + strconv.Itoa(*run.ExitCode)
	}
	return "stop reason " + shortName(run.StopReason)
}

// item emits one of a run's model or tool calls, within [lo, hi].
func (w *nestedWriter) item(parent *span, base string, i int, run *nested.Run, it *nested.Item, lo, hi time.Time) {
	m := w.m
	start, end := w.within(it.Start, lo, hi), w.within(it.End, lo, hi)
	if it.Start.IsZero() && !it.End.IsZero() {
		start = end
	}
	agent := semconv.GenAIAgentName(shortName(run.Agent))
	if it.Kind == nested.Chat {
		attrs := append(w.attrs(),
			semconv.GenAIOperationNameChat, agent,
			semconv.GenAIResponseFinishReasons(genaimsg.FinishReason(it.StopReason)),
			vocab.StopReasonKey.String(shortName(it.StopReason)),
		)
		if it.Provider != "" {
			attrs = appendProviderAttrs(attrs, shortName(it.Provider))
		}
		if it.Model != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(shortName(it.Model)))
		}
		if it.ResponseModel != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(shortName(it.ResponseModel)))
		} else if it.Model != "" {
			attrs = append(attrs, semconv.GenAIResponseModel(shortName(it.Model)))
		}
		if it.DurationMs != nil {
			attrs = append(attrs, vocab.DurationMsKey.Float64(*it.DurationMs))
		}
		if u := it.Usage; u != nil {
			attrs = appendUsageAttrs(attrs, u)
			attrs = append(attrs, vocab.CostTotalKey.Float64(u.Cost.Total))
		}
		if it.StopReason == "error" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errtext.Class(it.ErrorMessage)))
		}
		s := w.start(parent, base, "chat", i, w.chatSpanName(it.Model), trace.SpanKindClient, start, attrs)
		if it.StopReason == "error" && s.rec {
			s.SetStatus(codes.Error, m.errorText(it.ErrorMessage))
		}
		s.finish(end)
		return
	}
	attrs := append(w.attrs(),
		semconv.GenAIOperationNameExecuteTool, agent,
		semconv.GenAIToolName(shortName(it.ToolName)),
		semconv.GenAIToolCallID(shortName(it.ToolCallID)),
		semconv.GenAIToolTypeKey.String(vocab.ToolTypeFunction),
	)
	if it.DurationMs != nil {
		attrs = append(attrs, vocab.ToolDurationMsKey.Float64(*it.DurationMs))
	}
	if it.IsError {
		attrs = append(attrs, semconv.ErrorTypeKey.String(vocab.ToolErrorType))
	}
	s := w.start(parent, base, "tool", i, w.toolSpanName(it.ToolName), trace.SpanKindInternal, start, attrs)
	if it.IsError && s.rec {
		s.SetStatus(codes.Error, "tool reported an error")
	}
	if it.Nested != nil && !it.Nested.Empty() {
		outer := w.end
		w.end = time.Time{}
		w.result(s, it.Nested, end)
		if w.end.After(end) {
			end = w.end // contain the children, as for the top tool
		}
		w.ended(outer)
		if u := it.Nested.Usage; u != nil && s.rec {
			s.SetAttributes(appendUsageAttrs(nil, u)...)
			s.SetAttributes(vocab.CostTotalKey.Float64(u.Cost.Total))
		}
	}
	s.finish(end)
}
