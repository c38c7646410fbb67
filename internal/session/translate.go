package session

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Why a tool span whose result is missing from the file ends in error.
const missingResult = "no tool result in the session file: Pi stopped before the tool returned"

// translator replays one run's entries as the events the stream mapper
// reads, with the times the file gives.
type translator struct {
	t *FileMapper // its mapper, and its results: the run's tool calls answered
	// now is the latest time of the run's own work (messages, tools,
	// turns), the floor of what follows; last is the latest time of
	// anything emitted, entries beside that work too (a session_info, a
	// thinking level, a system message), where the run ends. Pi writes
	// those when it gets to it, often while a model call runs, so they
	// must not move the turn that call starts.
	now, last time.Time
	// key and uncounted are the run's identity, on every input
	// (agentmap.Input).
	key       string
	uncounted bool

	agentOpen, turnOpen bool
	turnStart           time.Time // when the open turn began, as emitted
	turnHasAssistant    bool
	errHeld             *message // an errored attempt: a retry may follow
	errEnd              time.Time
	retryOpen           bool
	attempt             int
	calls               []call   // tool calls of the last assistant message still without a result
	missing             []string // ids of open tool spans whose result never came
	assistantEnd        time.Time
	lastStop            string
}

type call struct {
	id, name, skill string
	args            json.RawMessage
}

func (x *translator) emit(ev *event.Event, at time.Time) { x.handle(ev, at, nil, false) }

// emitAside emits an entry beside the run's work: it moves the run's
// end, not its clock (see translator.now).
func (x *translator) emitAside(ev *event.Event, at time.Time) { x.handle(ev, at, nil, true) }

// handle gives the mapper ev, with the run's identity and what a tool
// result held (nested), at a time no earlier than the last (but
// for starts, which the file times apart).
func (x *translator) handle(ev *event.Event, at time.Time, nested *nested.Result, aside bool) {
	if at.IsZero() || at.Before(x.now) && ev.Type != event.TypeToolExecutionStart && ev.Type != event.TypeMessageStart {
		at = x.now
	}
	if at.After(x.now) && !aside {
		x.now = at
	}
	if at.After(x.last) {
		x.last = at
	}
	x.t.m.Handle(agentmap.Input{Event: ev, At: at, Nested: nested, Key: x.key, Uncounted: x.uncounted})
}

func (x *translator) rootEvent(name string, at time.Time, attrs ...attribute.KeyValue) {
	if at.Before(x.now) || at.IsZero() {
		at = x.now
	}
	trace.SpanFromContext(x.t.m.RootContext()).AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

// translate traces run r.
func (t *FileMapper) translate(r *runBuf, settled bool, end agentmap.Ending, uncounted bool) {
	t.results.Reset() // reused: a long file has many runs
	x := &translator{t: t, key: r.key, uncounted: uncounted}
	first := r.entries[0]
	start := runStart(first)
	x.now, x.last = start, start
	x.emit(&event.Event{Type: event.TypeAgentStart}, start)
	x.agentOpen = true
	t.rootAttributes(r, trace.SpanFromContext(t.m.RootContext()))
	for _, e := range r.pending {
		x.entry(e)
	}
	for _, e := range r.entries {
		x.entry(e)
	}
	x.finish(settled, end)
}

// rootAttributes are what only the file tells: the project, the branch
// and the fork a run belongs to.
func (t *FileMapper) rootAttributes(r *runBuf, root trace.Span) {
	attrs := []attribute.KeyValue{vocab.SourceKey.String(vocab.SourceSessionFile)}
	if c := t.cfg.Content; c != nil && t.hdr.Cwd != "" {
		attrs = append(attrs, vocab.CwdKey.String(c.Scrub(t.hdr.Cwd)))
	}
	if r.branch != nil {
		attrs = append(attrs, vocab.BranchKey.Bool(true),
			vocab.BranchParentEntryIDKey.String(*r.branch))
		if key := t.runKey(*r.branch); key != "" && key != r.key {
			root.AddLink(trace.Link{
				SpanContext: linkTo(key),
				Attributes:  []attribute.KeyValue{vocab.LinkKey.String(vocab.LinkBranchParent)},
			})
		}
	}
	if t.hdr.ParentSession != "" {
		origin := originID(t.hdr.ParentSession)
		attrs = append(attrs, vocab.SessionParentIDKey.String(origin))
		if origin != "" && t.forkRun != "" && !t.forkLinked {
			t.forkLinked = true
			root.AddLink(trace.Link{
				SpanContext: linkTo(origin + "/" + t.forkRun),
				Attributes:  []attribute.KeyValue{vocab.LinkKey.String(vocab.LinkForkOrigin)},
			})
		}
		if t.parentTool.IsValid() {
			// A child session: its first run links to the tool that ran it.
			root.AddLink(trace.Link{
				SpanContext: t.parentTool,
				Attributes:  []attribute.KeyValue{vocab.LinkKey.String(vocab.LinkParentTool)},
			})
			t.parentTool = trace.SpanContext{}
		}
	}
	root.SetAttributes(attrs...)
}

// linkTo is the root of the run keyed key.
func linkTo(key string) trace.SpanContext {
	return spanid.SpanContext(spanid.TraceID(key), key, spanid.Path{})
}

func (x *translator) entry(e *entry) {
	if e.msg != nil {
		x.message(e)
		return
	}
	at := e.persist
	switch e.Type {
	case typeCompaction:
		x.compaction(e)
	case typeContextEdit:
		// Marks a retry; the next attempt says so.
	case typeUsage, typeModelUsage:
		kind := e.Kind
		if e.Type == typeModelUsage {
			kind = e.Purpose
		}
		attrs := []attribute.KeyValue{vocab.UsageKindKey.String(kind)}
		if e.Provider != "" {
			attrs = append(attrs, semconv.GenAIProviderNameKey.String(e.Provider))
		}
		if e.Model != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(e.Model))
		}
		attrs = append(attrs, x.addUsage(e.Usage)...)
		x.rootEvent(vocab.EventUsage, at, attrs...)
	case typeBranchSummary:
		attrs := []attribute.KeyValue{vocab.BranchFromEntryIDKey.String(e.FromID)}
		attrs = append(attrs, x.addUsage(e.Usage)...)
		x.rootEvent(vocab.EventBranchSummary, at, attrs...)
	case typeModelChange:
		provider, model := e.Provider, e.ModelID
		if provider == "" && model == "" {
			// oh-my-pi's: one "model" field, "provider/model".
			provider, model, _ = strings.Cut(e.Model, "/")
			if model == "" {
				provider, model = "", e.Model
			}
		}
		x.rootEvent(vocab.EventModelChange, at,
			semconv.GenAIProviderNameKey.String(provider), semconv.GenAIRequestModel(model))
	case typeThinking:
		x.emitAside(&event.Event{Type: event.TypeThinkingLevelChanged, Level: e.ThinkingLevel}, at)
	case typeSessionInfo:
		x.emitAside(&event.Event{Type: event.TypeSessionInfoChanged, Name: e.Name}, at)
	case typeLabel:
		attrs := []attribute.KeyValue{
			vocab.LabelTargetIDKey.String(e.TargetID),
			vocab.LabelClearedKey.Bool(e.Label == nil),
		}
		if c := x.t.cfg.Content; c != nil && e.Label != nil {
			attrs = append(attrs, vocab.LabelKey.String(c.Scrub(*e.Label)))
		}
		x.rootEvent(vocab.EventLabel, at, attrs...)
	case typeCustom:
		x.rootEvent(vocab.EventCustom, at, vocab.CustomTypeKey.String(e.CustomType))
	case typeCustomMessage:
		x.customMessage(e.CustomType, e.Display, e.images, e.Content, at)
	default:
		x.rootEvent(vocab.EventUnknownEntry, at, vocab.EntryTypeKey.String(e.Type))
	}
}

// customMessage records an extension's message; content is nil without
// content capture.
func (x *translator) customMessage(typ string, display looseBool, images int, content json.RawMessage, at time.Time) {
	attrs := []attribute.KeyValue{vocab.CustomTypeKey.String(typ)}
	if display.v != nil {
		attrs = append(attrs, vocab.CustomDisplayKey.Bool(*display.v))
	}
	if images > 0 {
		attrs = append(attrs, vocab.MessageImagesKey.Int(images))
	}
	if c := x.t.cfg.Content; c != nil && len(content) > 0 {
		attrs = append(attrs, vocab.CustomContentKey.String(c.Scrub(string(content))))
	}
	x.rootEvent(vocab.EventCustomMessage, at, attrs...)
}

// addUsage counts usage the mapper does not see into the root's totals.
func (x *translator) addUsage(u *event.Usage) []attribute.KeyValue {
	if u == nil {
		return nil
	}
	x.t.m.AddUsage(u, x.now)
	return []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(int(u.Input + u.CacheRead + u.CacheWrite)),
		semconv.GenAIUsageOutputTokens(int(u.Output)),
		vocab.CostTotalKey.Float64(u.Cost.Total),
	}
}

func (x *translator) message(e *entry) {
	msg := e.msg
	switch msg.Role {
	case "user":
		at := msgTime(msg.Timestamp)
		if at.Before(x.now) || at.IsZero() {
			at = x.now
		}
		x.resolveError()
		x.missingResults()
		x.ensureAgent(at)
		x.endTurn()
		x.emit(&event.Event{Type: event.TypeTurnStart}, at)
		x.turnOpen, x.turnHasAssistant, x.turnStart = true, false, x.now
		if msg.images > 0 {
			x.rootEvent(vocab.EventUserImages, at, vocab.MessageImagesKey.Int(msg.images))
		}
		x.emit(&event.Event{Type: event.TypeMessageEnd, Message: &msg.Message, RawMessage: msg.Raw}, at)
	case "assistant":
		x.assistant(e)
	case "toolResult":
		x.toolResult(e)
	case "system":
		x.emitAside(&event.Event{Type: event.TypeMessageEnd, Message: &msg.Message, RawMessage: msg.Raw}, at(msg, e))
	case "bashExecution":
		x.t.bashSpan(spanid.WithKey(x.t.m.RootContext(), x.key, spanid.Path{Kind: "bash", ID: e.ID}), e, false, x.uncounted)
	case "custom":
		x.customMessage(msg.CustomType, msg.Display, msg.images, msg.Content, at(msg, e))
	default:
		x.rootEvent(vocab.EventUnknownMessage, e.persist, vocab.MessageRoleKey.String(msg.Role))
	}
}

func at(msg *message, e *entry) time.Time {
	if ts := msgTime(msg.Timestamp); !ts.IsZero() {
		return ts
	}
	return e.persist
}

func (x *translator) ensureAgent(at time.Time) {
	if !x.agentOpen {
		x.emit(&event.Event{Type: event.TypeAgentStart}, at)
		x.agentOpen = true
	}
}

func (x *translator) endTurn() {
	x.failMissing()
	if x.turnOpen {
		x.emit(&event.Event{Type: event.TypeTurnEnd}, x.now)
		x.turnOpen = false
	}
}

func (x *translator) endAgent(willRetry bool) {
	x.endTurn()
	if x.agentOpen {
		x.emit(&event.Event{Type: event.TypeAgentEnd, WillRetry: &willRetry}, x.now)
		x.agentOpen = false
	}
}

// resolveError settles a held error with no retry after it.
func (x *translator) resolveError() {
	if x.errHeld == nil {
		return
	}
	if x.retryOpen {
		x.endAgent(false)
		f := false
		x.emit(&event.Event{Type: event.TypeAutoRetryEnd, Attempt: x.attempt, Success: &f, FinalError: x.errHeld.ErrorMessage}, x.now)
		x.retryOpen, x.attempt = false, 0
	}
	x.errHeld = nil
}

// missingResults opens a span for every tool call whose result never
// came; failMissing ends them in error when their turn ends.
func (x *translator) missingResults() {
	for _, c := range x.calls {
		x.emit(&event.Event{Type: event.TypeToolExecutionStart, ToolCallID: c.id, ToolName: c.name, Args: c.args, Skill: c.skill}, x.assistantEnd)
		x.missing = append(x.missing, c.id)
	}
	// Kept for the run's next message's calls: most messages make some.
	clear(x.calls)
	x.calls = x.calls[:0]
}

func (x *translator) failMissing() {
	for _, id := range x.missing {
		x.t.m.FailTool(id, "tool_result_missing", missingResult, x.now)
	}
	x.missing = nil
}

func (x *translator) assistant(e *entry) {
	msg := e.msg
	start := at(msg, e)
	end := e.persist
	if s, d, ok := msg.CallTime(); ok {
		if !s.IsZero() {
			start = s
		}
		end = start.Add(d)
	}
	if end.Before(start) {
		end = start
	}
	x.missingResults()
	if x.errHeld != nil {
		// An errored attempt followed by another: Pi retried.
		x.endAgent(true)
		x.attempt++
		x.emit(&event.Event{Type: event.TypeAutoRetryStart, Attempt: x.attempt, ErrorMessage: x.errHeld.ErrorMessage}, x.errEnd)
		x.retryOpen = true
		x.errHeld = nil
	}
	x.ensureAgent(start)
	if !x.turnOpen || x.turnHasAssistant {
		x.endTurn()
		x.emit(&event.Event{Type: event.TypeTurnStart}, start)
		x.turnOpen, x.turnStart = true, x.now
	}
	// A turn starts no earlier than the work before it, and its call
	// within it. Entries beside the work do not move the turn (see
	// translator.now), so this holds the message's own start but where
	// its timestamp is earlier than the work before it (clocks that
	// disagree): the call then starts with its turn.
	if start.Before(x.turnStart) {
		start = x.turnStart
		if end.Before(start) {
			end = start
		}
	}
	x.turnHasAssistant = true
	x.emit(&event.Event{Type: event.TypeMessageStart, Message: &msg.Message, RawMessage: msg.Raw}, start)
	x.emit(&event.Event{Type: event.TypeMessageEnd, Message: &msg.Message, RawMessage: msg.Raw}, end)
	x.assistantEnd = end
	x.lastStop = msg.StopReason
	if x.retryOpen && msg.StopReason != "error" {
		t := true
		x.emit(&event.Event{Type: event.TypeAutoRetryEnd, Attempt: x.attempt, Success: &t}, end)
		x.retryOpen, x.attempt = false, 0
	}
	if msg.StopReason == "error" {
		x.errHeld, x.errEnd = msg, end
	}
	ids, names := msg.callIDs, msg.callNames
	for i, id := range ids {
		x.t.results.Ask(id)
		c := call{id: id, name: names[i]}
		if i < len(msg.callSkills) {
			c.skill = msg.callSkills[i]
		}
		if x.t.cfg.Content != nil {
			c.args = toolArgs(msg.Content, id)
		}
		x.calls = append(x.calls, c)
	}
}

func (x *translator) toolResult(e *entry) {
	msg := e.msg
	end := at(msg, e)
	start := x.assistantEnd
	if msg.DurationMs != nil {
		start = end.Add(-time.Duration(*msg.DurationMs * float64(time.Millisecond)))
	}
	if start.Before(x.assistantEnd) {
		start = x.assistantEnd
	}
	name := msg.ToolName
	var args json.RawMessage
	var skill string
	open := false
	for i, c := range x.calls {
		if c.id == msg.ToolCallID {
			if name == "" {
				name = c.name
			}
			args, skill = c.args, c.skill
			x.calls = append(x.calls[:i], x.calls[i+1:]...)
			open = true
			break
		}
	}
	if x.t.results.Answer(msg.ToolCallID) && !open {
		// A second result for a call that has one (persisted again under
		// another entry id, or after the next model call): one tool
		// execution, one span. A call id the model asks for again in a
		// later message is a new call, and opens.
		x.t.stats.Repeated++
		return
	}
	x.ensureAgent(start)
	x.emit(&event.Event{Type: event.TypeToolExecutionStart, ToolCallID: msg.ToolCallID, ToolName: name, Args: args, Skill: skill}, start)
	ev := &event.Event{Type: event.TypeToolExecutionEnd, ToolCallID: msg.ToolCallID, ToolName: name,
		IsError: msg.IsError, DurationMs: msg.DurationMs}
	if x.t.cfg.Content != nil {
		ev.Result = msg.Raw
	}
	if msg.nested != nil {
		// The same rule below the tool: a child's result given twice.
		x.t.stats.Repeated += int64(msg.nested.Dropped.Repeated)
		x.noteChildren(msg)
	}
	x.handle(ev, end, msg.nested, false)
}

type compactionResult struct {
	TokensBefore *int64       `json:"tokensBefore,omitempty"`
	Usage        *event.Usage `json:"usage,omitempty"`
}

func (x *translator) compaction(e *entry) {
	x.missingResults()
	reason := "unknown" // the file does not say, except for an overflow
	willRetry := false
	switch {
	case e.FromHook != nil && *e.FromHook:
		reason = "extension"
	case x.errHeld != nil:
		// An attempt that failed, then a compaction: Pi compacts to retry
		// after a context overflow.
		reason, willRetry = "overflow", true
		x.errHeld = nil
	}
	if willRetry || x.lastStop != "toolUse" {
		// After an attempt or a final answer the agent run has ended; mid-run
		// (after tool results) the compaction sits between two turns.
		x.endAgent(false)
	} else {
		x.endTurn()
	}
	res, _ := json.Marshal(compactionResult{TokensBefore: e.TokensBefore, Usage: e.Usage})
	x.emit(&event.Event{Type: event.TypeCompactionStart, Reason: reason}, x.now)
	f := false
	x.emit(&event.Event{Type: event.TypeCompactionEnd, Reason: reason, Result: res, Aborted: &f, WillRetry: &willRetry,
		Compaction: &event.Compaction{TokensBefore: e.TokensBefore, Usage: e.Usage}}, e.persist)
}

// finish closes the run: settled, or as the mapper closes an unfinished
// stream.
func (x *translator) finish(settled bool, end agentmap.Ending) {
	if !settled {
		x.missingResults()
		x.failMissing()
		end.Reason = cmp.Or(end.Reason, vocab.EndEOF)
		x.t.m.Close(end, x.last)
		return
	}
	x.resolveError()
	x.missingResults()
	x.endAgent(false)
	aborted := x.lastStop == "aborted"
	x.emit(&event.Event{Type: event.TypeAgentSettled, Aborted: &aborted}, x.last)
}

// bashSpan traces a command the user ran with ! (bashExecution): user
// activity, not the model's, so a pi.bash span with its exit code and
// whether it was cancelled; the command text only with content capture.
// Pi records when it finished, not how long it ran.
func (t *FileMapper) bashSpan(parent context.Context, e *entry, own, retraced bool) {
	msg := e.msg
	ts := at(msg, e)
	attrs := []attribute.KeyValue{
		vocab.BashCancelledKey.Bool(msg.Cancelled),
		vocab.BashTruncatedKey.Bool(msg.Truncated),
		vocab.BashExcludedKey.Bool(msg.ExcludeCtx),
	}
	if msg.ExitCode != nil {
		attrs = append(attrs, vocab.BashExitCodeKey.Int(*msg.ExitCode))
	}
	if c := t.cfg.Content; c != nil {
		attrs = append(attrs, vocab.BashCommandKey.String(c.Scrub(msg.Command)))
	}
	// Started here, not by the mapper: the run's common attributes too.
	attrs = append(attrs, semconv.GenAIConversationID(t.hdr.ID))
	if t.hdr.Cwd != "" {
		attrs = append(attrs, vocab.ProjectKey.String(agentmap.Project(t.hdr.Cwd)))
	}
	if own {
		attrs = append(attrs, vocab.SourceKey.String(vocab.SourceSessionFile))
	}
	if retraced {
		attrs = append(attrs, vocab.RetracedKey.Bool(true))
	}
	_, s := t.tracer.Start(parent, vocab.SpanBash, trace.WithTimestamp(ts), trace.WithAttributes(attrs...))
	s.End(trace.WithTimestamp(ts))
}

// noteChildren tells Config.ParentTools which child sessions the open tool
// span of msg ran, so that their links need no read of this file.
func (x *translator) noteChildren(msg *message) {
	p := x.t.cfg.ParentTools
	if p == nil {
		return
	}
	sc, ok := x.t.m.ToolContext(msg.ToolCallID)
	if !ok {
		return
	}
	for _, run := range msg.nested.Runs {
		if run.Session != "" {
			p.note(run.Session, sc)
		}
	}
}
