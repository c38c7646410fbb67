// Package mapper turns Pi's event stream into spans.
//
// It is a pure state machine: decoded events and their times go in, spans
// come out through the trace.TracerProvider it is given. It knows nothing of
// processes, files or exporters, so run, rpc and replay share it, and tests
// drive it with recorded streams. See docs/span-model.md for the tree.
package mapper

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/content/genaimsg"
	"github.com/pi-otel/pi-otel/internal/errtext"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper/piconv"
)

// ScopeName is the instrumentation scope of every span the mapper makes.
const ScopeName = "github.com/pi-otel/pi-otel/mapper"

// End reasons for the root span (pi.end_reason), as in package piconv.
const (
	EndSettled  = piconv.EndSettled
	EndAgentEnd = piconv.EndAgentEnd
	EndSignal   = piconv.EndSignal
	EndExit     = piconv.EndExit
	EndEOF      = piconv.EndEOF
)

// Outcomes of a settled run (pi.outcome), as in package piconv.
const (
	OutcomeOK        = piconv.OutcomeOK
	OutcomeError     = piconv.OutcomeError
	OutcomeAborted   = piconv.OutcomeAborted
	OutcomeUnsettled = piconv.OutcomeUnsettled
)

// maxToolUpdateEvents caps the span events a chatty tool can add; the total
// is still counted in pi.tool.updates.
const maxToolUpdateEvents = 16

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
	inexact bool
}

// Option configures a Mapper.
type Option func(*config)

// WithParent makes every root a child of the span in ctx, e.g. the caller's
// TRACEPARENT, so that a CI job's trace contains the agent.
func WithParent(ctx context.Context) Option {
	return func(c *config) { c.parent = ctx }
}

// WithInexactTimes says event times are reconstructed from the stream, as
// replay does, rather than observed. Spans keep their times, but
// gen_ai.response.time_to_first_chunk, which no record carries, is left out
// instead of reported as zero.
func WithInexactTimes() Option {
	return func(c *config) { c.inexact = true }
}

// WithContent turns on opt-in content capture.
func WithContent(c Content) Option {
	return func(cfg *config) { cfg.content = c }
}

// Stats counts what the mapper saw. Anomalies are tolerated, never fatal.
type Stats struct {
	Events    int64
	Unknown   int64
	Roots     int64
	Anomalies map[string]int64
}

// Ending says why a stream stopped without settling.
type Ending struct {
	Reason   piconv.EndReason // EndSignal, EndExit or EndEOF
	ExitCode int              // set with EndSignal and EndExit
	Signal   string           // e.g. "SIGTERM", with EndSignal
}

// Mapper is not safe for concurrent use: feed it from one goroutine.
type Mapper struct {
	tracer  trace.Tracer
	cfg     config
	session string
	run     *run
	// legacy is set once the stream shows the pre-1.x protocol (no
	// agent_settled); settled is set once any agent_settled was seen.
	legacy, settledSeen bool
	stats               Stats
	lastRoot            trace.SpanContext
	// idleCompaction is a compaction with no run open (RPC `compact`);
	// idleParent, when set, is where the next one hangs.
	idleCompaction *compaction
	idleParent     context.Context
}

// New returns a Mapper that writes spans through tp.
func New(tp trace.TracerProvider, opts ...Option) *Mapper {
	cfg := config{parent: context.Background()}
	for _, o := range opts {
		o(&cfg)
	}
	return &Mapper{
		tracer: tp.Tracer(ScopeName),
		cfg:    cfg,
		stats:  Stats{Anomalies: map[string]int64{}},
	}
}

// Stats returns a copy of the counters.
func (m *Mapper) Stats() Stats {
	s := m.stats
	s.Anomalies = make(map[string]int64, len(m.stats.Anomalies))
	for k, v := range m.stats.Anomalies {
		s.Anomalies[k] = v
	}
	return s
}

// SessionID is the id from the session header, once seen.
func (m *Mapper) SessionID() string { return m.session }

// SetSessionID sets gen_ai.conversation.id when the stream has no header
// (RPC mode learns it from get_state).
func (m *Mapper) SetSessionID(id string) {
	m.session = id
	if m.run != nil && id != "" {
		m.run.root.SetAttributes(semconv.GenAIConversationID(id))
	}
}

// Active reports whether a root span is open.
func (m *Mapper) Active() bool { return m.run != nil }

// RootContext returns a context holding the open root span, or the
// configured parent when idle. RPC command spans hang from it.
func (m *Mapper) RootContext() context.Context {
	if m.run != nil {
		return m.run.rootCtx
	}
	return m.cfg.parent
}

// CurrentContext returns a context holding the innermost open span.
func (m *Mapper) CurrentContext() context.Context {
	if m.run == nil {
		return m.cfg.parent
	}
	return m.run.innermost().ctx
}

// ParentNextIdleCompaction hangs the next compaction that starts with no
// run open under ctx, e.g. the RPC `compact` command that asked for it,
// instead of making it a trace of its own.
func (m *Mapper) ParentNextIdleCompaction(ctx context.Context) { m.idleParent = ctx }

// LastRoot is the span context of the most recently opened root.
func (m *Mapper) LastRoot() trace.SpanContext { return m.lastRoot }

// Open opens a root now if none is open, before agent_start arrives. RPC
// uses it for a prompt, whose response precedes agent_start.
func (m *Mapper) Open(at time.Time) context.Context {
	if m.run == nil {
		m.openRoot(at)
	}
	return m.run.rootCtx
}

func (m *Mapper) anomaly(kind string) { m.stats.Anomalies[kind]++ }

// Handle applies one event that happened at time at. The mapper does not
// keep ev after the call, so callers may reuse it (see event.Decoder).
func (m *Mapper) Handle(ev *event.Event, at time.Time) {
	m.stats.Events++
	switch ev.Type {
	case event.TypeSession:
		m.SetSessionID(ev.ID)
	case event.TypeAgentStart:
		m.agentStart(at)
	case event.TypeAgentEnd:
		m.agentEnd(ev, at)
	case event.TypeAgentSettled:
		m.agentSettled(ev, at)
	case event.TypeTurnStart:
		m.turnStart(at)
	case event.TypeTurnEnd:
		m.turnEnd(ev, at)
	case event.TypeMessageStart:
		m.messageStart(ev, at)
	case event.TypeMessageUpdate:
		m.messageUpdate(ev, at)
	case event.TypeMessageEnd:
		m.messageEnd(ev, at)
	case event.TypeToolExecutionStart:
		m.toolStart(ev, at)
	case event.TypeToolExecutionUpdate:
		m.toolUpdate(ev, at)
	case event.TypeToolExecutionEnd:
		m.toolEnd(ev, at)
	case event.TypeCompactionStart:
		m.compactionStart(ev, at)
	case event.TypeCompactionEnd:
		m.compactionEnd(ev, at)
	case event.TypeAutoRetryStart:
		m.retryStart(ev, at)
	case event.TypeAutoRetryEnd:
		m.retryEnd(ev, at)
	case event.TypeSummarizationRetrySchedule, event.TypeSummarizationRetryAttempt, event.TypeSummarizationRetryFinished:
		m.summarizationRetry(ev, at)
	case event.TypeQueueUpdate:
		m.rootEvent(piconv.EventQueueUpdate, at,
			piconv.QueueSteeringKey.Int(len(ev.Steering)),
			piconv.QueueFollowUpKey.Int(len(ev.FollowUp)))
	case event.TypeThinkingLevelChanged:
		m.rootEvent(piconv.EventThinkingLevel, at, piconv.ThinkingLevelKey.String(ev.Level))
	case event.TypeSessionInfoChanged:
		attrs := []attribute.KeyValue{piconv.SessionNamedKey.Bool(ev.Name != nil)}
		if c := m.cfg.content; c != nil && ev.Name != nil {
			attrs = append(attrs, piconv.SessionNameKey.String(c.Scrub(*ev.Name)))
		}
		m.rootEvent(piconv.EventSessionInfo, at, attrs...)
	case event.TypeEntryAppended:
		m.rootEvent(piconv.EventEntryAppended, at, piconv.EntryTypeKey.String(entryType(ev.Entry)))
	case event.TypeExtensionError:
		m.ExtensionError(ev, at)
	case event.TypeBashExecutionUpdate, event.TypeExtensionUIRequest, event.TypeResponse:
		// RPC records: the rpc package traces them; nothing to map here.
	default:
		m.stats.Unknown++
		m.currentEvent(piconv.EventUnknown, at, piconv.EventTypeKey.String(ev.Type))
	}
}

// ExtensionError records an extension_error on the innermost open span.
func (m *Mapper) ExtensionError(ev *event.Event, at time.Time) {
	attrs := []attribute.KeyValue{
		piconv.ExtensionPathKey.String(ev.ExtensionPath),
		piconv.ExtensionEventKey.String(ev.Event),
	}
	if c := m.cfg.content; c != nil {
		attrs = append(attrs, piconv.ExtensionErrorKey.String(c.Scrub(ev.Error)))
	}
	if m.run != nil {
		m.run.extensionErrors++
	}
	m.currentEvent(piconv.EventExtensionError, at, attrs...)
}

// Close ends a stream that stopped without settling: every open span ends,
// innermost first, and the root records why.
func (m *Mapper) Close(end Ending, at time.Time) {
	defer m.endCompaction(at, piconv.CompactionUnfinished) // an idle compaction, if any
	r := m.run
	if r == nil {
		return
	}
	// Pi before 1.x: a run whose last agent_end left nothing pending has
	// finished as far as that protocol can say.
	if m.legacy && r.agentRun == nil && !r.expectingContinuation() {
		m.closeRoot(r.lastEnd, EndAgentEnd, false)
		return
	}
	r.root.SetAttributes(piconv.UnfinishedKey.Bool(true))
	if end.Reason == EndSignal || end.Reason == EndExit {
		r.root.SetAttributes(piconv.ExitCodeKey.Int(end.ExitCode))
	}
	if end.Signal != "" {
		r.root.SetAttributes(piconv.SignalKey.String(end.Signal))
	}
	m.closeRoot(at, end.Reason, false)
}

// span is one open span and the context that holds it.
type span struct {
	trace.Span
	ctx   context.Context
	start time.Time
}

type chat struct {
	span
	firstChunk bool
}

type compaction struct {
	span
	parentID trace.SpanID // the span it hangs from, to close it with that span
}

type run struct {
	root     trace.Span
	rootCtx  context.Context
	rootSpan span

	agentRun   *span
	turn       *span
	chat       *chat
	tools      map[string]*span
	toolOrder  []string // open tool ids, oldest first, for innermost-first closing
	toolUpdate map[string]int
	compaction *compaction
	retry      *span

	agentRuns, turns, toolCalls, toolErrors, retries, compactions int
	extensionErrors                                               int
	turnToolCalls                                                 int

	usage     event.Usage
	provider  string
	model     string
	lastStop  string
	lastError string
	aborted   bool
	lastEnd   time.Time
	willRetry bool // the last compaction_end or agent_end said a retry follows
}

func (r *run) expectingContinuation() bool {
	// An open retry or compaction span is itself the pending continuation.
	return r.retry != nil || r.compaction != nil || r.willRetry
}

// innermost is the span new events and children attach to.
func (r *run) innermost() *span {
	switch {
	case r.chat != nil:
		return &r.chat.span
	case r.turn != nil:
		return r.turn
	case r.agentRun != nil:
		return r.agentRun
	}
	return &r.rootSpan
}

// container is where a new child span hangs: a turn, else a run, else root.
func (r *run) container() *span {
	switch {
	case r.turn != nil:
		return r.turn
	case r.agentRun != nil:
		return r.agentRun
	}
	return &r.rootSpan
}

func (m *Mapper) start(parent context.Context, name string, kind trace.SpanKind, at time.Time, attrs ...attribute.KeyValue) span {
	ctx, s := m.tracer.Start(parent, name,
		trace.WithSpanKind(kind), trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	return span{Span: s, ctx: ctx, start: at}
}

func (m *Mapper) openRoot(at time.Time) {
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(piconv.AgentName),
	}
	if m.session != "" {
		attrs = append(attrs, semconv.GenAIConversationID(m.session))
	}
	s := m.start(m.cfg.parent, piconv.SpanRoot, trace.SpanKindInternal, at, attrs...)
	m.run = &run{
		root:       s.Span,
		rootCtx:    s.ctx,
		rootSpan:   s,
		tools:      map[string]*span{},
		toolUpdate: map[string]int{},
		lastEnd:    at,
	}
	m.stats.Roots++
	m.lastRoot = s.SpanContext()
}

// ensureRun opens a root for events that arrive with none open, e.g. a
// replay that starts mid-run.
func (m *Mapper) ensureRun(at time.Time, what string) *run {
	if m.run == nil {
		m.anomaly(what + " without agent_start")
		m.openRoot(at)
	}
	return m.run
}

func (m *Mapper) agentStart(at time.Time) {
	if r := m.run; r != nil && m.legacy && r.agentRun == nil && !r.expectingContinuation() {
		// Pi before 1.x: nothing pending, so the previous run settled.
		m.closeRoot(r.lastEnd, EndAgentEnd, false)
	}
	if m.run == nil {
		m.openRoot(at)
	}
	r := m.run
	if r.agentRun != nil {
		m.anomaly("agent_start inside an agent run")
		m.endAgentRun(at, true)
	}
	r.willRetry = false
	s := m.start(r.rootCtx, piconv.SpanAgentRun, trace.SpanKindInternal, at,
		piconv.AgentRunIndexKey.Int(r.agentRuns))
	r.agentRuns++
	r.agentRun = &s
}

func (m *Mapper) agentEnd(ev *event.Event, at time.Time) {
	if ev.WillRetry == nil && !m.settledSeen {
		m.legacy = true
	}
	r := m.run
	if r == nil || r.agentRun == nil {
		m.anomaly("agent_end without agent_start")
		if r == nil {
			return
		}
	}
	if ev.WillRetry != nil {
		r.willRetry = *ev.WillRetry
		if r.agentRun != nil {
			r.agentRun.SetAttributes(piconv.WillRetryKey.Bool(*ev.WillRetry))
		}
	}
	m.endAgentRun(at, false)
	r.lastEnd = at
}

// endAgentRun closes the open run and everything inside it.
func (m *Mapper) endAgentRun(at time.Time, unfinished bool) {
	r := m.run
	m.endTurn(at, true)
	if r.compaction != nil && isUnder(r.compaction, r.agentRun) {
		m.endCompaction(at, piconv.CompactionUnfinished)
	}
	if r.agentRun == nil {
		return
	}
	if unfinished {
		r.agentRun.SetAttributes(piconv.UnfinishedKey.Bool(true))
	}
	if r.lastStop == "error" {
		r.agentRun.SetStatus(codes.Error, r.lastError)
	}
	r.agentRun.End(trace.WithTimestamp(at))
	r.agentRun = nil
}

func isUnder(c *compaction, s *span) bool {
	if s == nil {
		return false
	}
	// A compaction in a turn of s is closed with the turn, before this.
	return c.parentID == s.SpanContext().SpanID()
}

func (m *Mapper) agentSettled(ev *event.Event, at time.Time) {
	m.settledSeen = true
	m.legacy = false
	r := m.run
	if r == nil {
		m.anomaly("agent_settled with nothing open")
		return
	}
	if ev.Aborted != nil && *ev.Aborted {
		r.aborted = true
	}
	m.closeRoot(at, EndSettled, true)
}

// closeRoot ends everything open, innermost first, then the root.
func (m *Mapper) closeRoot(at time.Time, reason piconv.EndReason, settled bool) {
	r := m.run
	unfinished := reason != EndSettled && reason != EndAgentEnd
	if r.agentRun != nil {
		m.endAgentRun(at, unfinished)
	} else {
		m.endTurn(at, unfinished)
	}
	if r.compaction != nil {
		m.endCompaction(at, piconv.CompactionUnfinished)
	}
	if r.retry != nil {
		outcome := piconv.RetryUnfinished
		if !unfinished {
			// Settled with a retry still open: Pi gave up without saying so.
			outcome = piconv.RetryFailed
		}
		m.endRetry(at, outcome, "")
	}

	outcome := OutcomeOK
	switch {
	case unfinished:
		outcome = OutcomeUnsettled
	case r.aborted || r.lastStop == "aborted":
		outcome = OutcomeAborted
	case r.lastStop == "error":
		outcome = OutcomeError
	}
	root := r.root
	attrs := []attribute.KeyValue{
		piconv.SettledKey.Bool(settled),
		piconv.AbortedKey.Bool(r.aborted || r.lastStop == "aborted"),
		reason.Attr(),
		outcome.Attr(),
		piconv.AgentRunsKey.Int(r.agentRuns),
		piconv.TurnsKey.Int(r.turns),
		piconv.ToolCallsKey.Int(r.toolCalls),
		piconv.ToolErrorsKey.Int(r.toolErrors),
		piconv.RetriesKey.Int(r.retries),
		piconv.CompactionsKey.Int(r.compactions),
		piconv.CostTotalKey.Float64(r.usage.Cost.Total),
	}
	attrs = append(attrs, usageAttrs(&r.usage)...)
	if r.provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(r.provider))
	}
	if r.model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(r.model))
	}
	if r.extensionErrors > 0 {
		attrs = append(attrs, piconv.ExtensionErrorsKey.Int(r.extensionErrors))
	}
	root.SetAttributes(attrs...)
	switch outcome {
	case OutcomeError:
		root.SetStatus(codes.Error, r.lastError)
	case OutcomeUnsettled:
		root.SetStatus(codes.Error, "run did not settle: "+string(reason))
	}
	root.End(trace.WithTimestamp(at))
	m.run = nil
}

func (m *Mapper) turnStart(at time.Time) {
	r := m.ensureRun(at, "turn_start")
	if r.turn != nil {
		m.anomaly("turn_start inside a turn")
		m.endTurn(at, true)
	}
	parent := r.rootCtx
	if r.agentRun != nil {
		parent = r.agentRun.ctx
	}
	s := m.start(parent, piconv.SpanTurn, trace.SpanKindInternal, at, piconv.TurnIndexKey.Int(r.turns))
	r.turns++
	r.turnToolCalls = 0
	r.turn = &s
}

func (m *Mapper) turnEnd(ev *event.Event, at time.Time) {
	r := m.run
	if r == nil || r.turn == nil {
		m.anomaly("turn_end without turn_start")
		return
	}
	m.endTurn(at, false)
}

// endTurn closes the open turn and its open children.
func (m *Mapper) endTurn(at time.Time, unfinished bool) {
	r := m.run
	if r.chat != nil {
		r.chat.SetAttributes(piconv.UnfinishedKey.Bool(true))
		r.chat.End(trace.WithTimestamp(at))
		r.chat = nil
	}
	for len(r.toolOrder) > 0 {
		id := r.toolOrder[len(r.toolOrder)-1]
		m.endTool(id, at, piconv.UnfinishedKey.Bool(true))
	}
	if r.compaction != nil && r.turn != nil && r.compaction.parentID == r.turn.SpanContext().SpanID() {
		m.endCompaction(at, piconv.CompactionUnfinished)
	}
	if r.turn == nil {
		return
	}
	if unfinished {
		r.turn.SetAttributes(piconv.UnfinishedKey.Bool(true))
	}
	r.turn.SetAttributes(piconv.TurnToolCallsKey.Int(r.turnToolCalls))
	r.turn.End(trace.WithTimestamp(at))
	r.turn = nil
}

func (m *Mapper) messageStart(ev *event.Event, at time.Time) {
	msg := ev.Message
	if msg == nil || msg.Role != "assistant" {
		return // user and system messages are recorded once, at message_end
	}
	r := m.ensureRun(at, "message_start")
	if r.chat != nil {
		m.anomaly("message_start inside a message")
		r.chat.SetAttributes(piconv.UnfinishedKey.Bool(true))
		r.chat.End(trace.WithTimestamp(at))
	}
	name := piconv.SpanChat.Name(msg.Model)
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat}
	if msg.Provider != "" {
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(msg.Provider))
	}
	if msg.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(msg.Model))
	}
	s := m.start(r.container().ctx, name, trace.SpanKindClient, at, attrs...)
	r.chat = &chat{span: s}
}

func (m *Mapper) messageUpdate(ev *event.Event, at time.Time) {
	if len(ev.RawMessage) > 0 && !m.settledSeen {
		// Pi before 1.x sends cumulative snapshots with each update.
		m.legacy = true
	}
	r := m.run
	if r == nil || r.chat == nil || r.chat.firstChunk || ev.AssistantMessageEvent == nil || m.cfg.inexact {
		return
	}
	switch ev.AssistantMessageEvent.Type {
	case "text_delta", "thinking_delta", "toolcall_delta", "text_start", "thinking_start", "toolcall_start":
		r.chat.firstChunk = true
		r.chat.SetAttributes(semconv.GenAIResponseTimeToFirstChunk(at.Sub(r.chat.start).Seconds()))
	}
}

func (m *Mapper) messageEnd(ev *event.Event, at time.Time) {
	msg := ev.Message
	if msg == nil {
		return
	}
	switch msg.Role {
	case "assistant":
		m.assistantEnd(msg, at)
	case "user":
		attrs := []attribute.KeyValue{piconv.MessageCharsKey.Int(contentChars(msg.Content))}
		if c := m.cfg.content; c != nil {
			attrs = append(attrs, semconv.GenAIInputMessagesKey.String(c.InputMessages([][]byte{rawMessage(ev)})))
		}
		m.currentEvent(piconv.EventUserMessage, at, attrs...)
	case "system":
		attrs := []attribute.KeyValue{
			piconv.SystemSectionsKey.StringSlice(sectionNames(msg.Sections)),
			piconv.SystemToolCountKey.Int(len(msg.ToolsAdded) + len(msg.Tools)),
		}
		if c := m.cfg.content; c != nil {
			attrs = append(attrs, semconv.GenAISystemInstructionsKey.String(c.SystemInstructions(rawMessage(ev))))
		}
		m.rootEvent(piconv.EventSystemMessage, at, attrs...)
	}
}

func (m *Mapper) assistantEnd(msg *event.Message, at time.Time) {
	r := m.ensureRun(at, "message_end")
	if r.chat == nil {
		m.anomaly("assistant message_end without message_start")
		m.messageStart(&event.Event{Type: event.TypeMessageStart, Message: msg}, at)
	}
	c := r.chat
	attrs := []attribute.KeyValue{
		// The convention's names (tool_call, not toolUse); Pi's own stays
		// in pi.stop_reason.
		semconv.GenAIResponseFinishReasons(genaimsg.FinishReason(msg.StopReason)),
		piconv.StopReasonKey.String(msg.StopReason),
	}
	if msg.ResponseModel != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(msg.ResponseModel))
	} else if msg.Model != "" {
		attrs = append(attrs, semconv.GenAIResponseModel(msg.Model))
	}
	if msg.ResponseID != "" {
		attrs = append(attrs, semconv.GenAIResponseID(msg.ResponseID))
	}
	if msg.RawStopReason != "" {
		attrs = append(attrs, piconv.RawStopReasonKey.String(msg.RawStopReason))
	}
	if msg.DurationMs != nil {
		attrs = append(attrs, piconv.DurationMsKey.Float64(*msg.DurationMs))
	}
	if u := msg.Usage; u != nil {
		attrs = append(attrs, usageAttrs(u)...)
		attrs = append(attrs, piconv.CostTotalKey.Float64(u.Cost.Total))
		addUsage(&r.usage, u)
	}
	if cc := m.cfg.content; cc != nil {
		attrs = append(attrs, semconv.GenAIOutputMessagesKey.String(cc.OutputMessages([][]byte{assistantRaw(msg)})))
	}
	c.SetAttributes(attrs...)
	if msg.StopReason == "error" {
		c.SetAttributes(semconv.ErrorTypeKey.String(errtext.Class(msg.ErrorMessage)))
		c.SetStatus(codes.Error, m.errorText(msg.ErrorMessage))
	}
	if msg.Provider != "" {
		r.provider = msg.Provider
	}
	if msg.Model != "" {
		r.model = msg.Model
	}
	r.lastStop = msg.StopReason
	r.lastError = ""
	if msg.StopReason == "error" {
		r.lastError = m.errorText(msg.ErrorMessage)
	}
	if msg.StopReason == "error" && r.turn != nil {
		r.turn.SetStatus(codes.Error, r.lastError)
	}
	c.End(trace.WithTimestamp(at))
	r.chat = nil
}

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

func (m *Mapper) compactionStart(ev *event.Event, at time.Time) {
	parent := m.cfg.parent
	var parentID trace.SpanID
	if m.openCompaction() != nil {
		m.anomaly("compaction_start inside a compaction")
		m.endCompaction(at, piconv.CompactionUnfinished)
	}
	if r := m.run; r != nil {
		p := r.container()
		parent, parentID = p.ctx, p.SpanContext().SpanID()
		r.compactions++
	} else if m.idleParent != nil {
		parent, m.idleParent = m.idleParent, nil
	}
	attrs := []attribute.KeyValue{piconv.CompactionReasonKey.String(ev.Reason)}
	if r := m.run; r != nil && r.model != "" {
		// Pi summarises with the run's model: its cost belongs there.
		attrs = append(attrs, semconv.GenAIProviderNameKey.String(r.provider), semconv.GenAIRequestModel(r.model))
	}
	s := m.start(parent, piconv.SpanCompaction, trace.SpanKindInternal, at, attrs...)
	c := &compaction{span: s, parentID: parentID}
	if m.run != nil {
		m.run.compaction = c
	} else {
		// Compaction with no run open (RPC `compact` while idle): its own
		// short trace, or under ParentNextIdleCompaction's span.
		m.idleCompaction = c
	}
}

type compactionResult struct {
	TokensBefore         *int64       `json:"tokensBefore"`
	EstimatedTokensAfter *int64       `json:"estimatedTokensAfter"`
	Usage                *event.Usage `json:"usage"`
}

func (m *Mapper) compactionEnd(ev *event.Event, at time.Time) {
	c := m.openCompaction()
	if c == nil {
		m.anomaly("compaction_end without compaction_start")
		m.compactionStart(ev, at)
		c = m.openCompaction()
	}
	attrs := []attribute.KeyValue{}
	if ev.Aborted != nil {
		attrs = append(attrs, piconv.CompactionAbortedKey.Bool(*ev.Aborted))
	}
	if ev.WillRetry != nil {
		attrs = append(attrs, piconv.CompactionWillRetryKey.Bool(*ev.WillRetry))
	}
	if res := decodeCompaction(ev.Result); res != nil {
		if res.TokensBefore != nil {
			attrs = append(attrs, piconv.CompactionTokensBeforeKey.Int64(*res.TokensBefore))
		}
		if res.EstimatedTokensAfter != nil {
			attrs = append(attrs, piconv.CompactionTokensAfterKey.Int64(*res.EstimatedTokensAfter))
		}
		if u := res.Usage; u != nil {
			// Summarising is a model call too: it counts in the run's cost.
			attrs = append(attrs, usageAttrs(u)...)
			attrs = append(attrs, piconv.CostTotalKey.Float64(u.Cost.Total))
			if m.run != nil {
				addUsage(&m.run.usage, u)
			}
		}
	}
	c.SetAttributes(attrs...)
	outcome := piconv.CompactionOK
	switch {
	case ev.Aborted != nil && *ev.Aborted:
		outcome = piconv.CompactionAborted
	case len(ev.Result) == 0 || string(ev.Result) == "null":
		outcome = piconv.CompactionError
		c.SetStatus(codes.Error, m.errorText(ev.ErrorMessage))
	}
	if r := m.run; r != nil && ev.WillRetry != nil && *ev.WillRetry {
		r.willRetry = true
	}
	m.endCompaction(at, outcome)
}

// openCompaction is the open compaction: the run's, else an idle one.
func (m *Mapper) openCompaction() *compaction {
	if m.run != nil && m.run.compaction != nil {
		return m.run.compaction
	}
	return m.idleCompaction
}

func (m *Mapper) endCompaction(at time.Time, outcome piconv.CompactionOutcome) {
	c := m.openCompaction()
	if c == nil {
		return
	}
	if m.run != nil && m.run.compaction == c {
		m.run.compaction = nil
		m.run.lastEnd = at
	} else {
		m.idleCompaction = nil
	}
	if outcome == piconv.CompactionUnfinished {
		c.SetAttributes(piconv.UnfinishedKey.Bool(true))
		c.SetStatus(codes.Error, "compaction did not finish")
	}
	c.SetAttributes(outcome.Attr())
	c.End(trace.WithTimestamp(at))
}

func (m *Mapper) summarizationRetry(ev *event.Event, at time.Time) {
	attrs := []attribute.KeyValue{piconv.PhaseKey.String(ev.Type)}
	if ev.Attempt > 0 {
		attrs = append(attrs, piconv.RetryAttemptKey.Int(ev.Attempt),
			piconv.RetryMaxAttemptsKey.Int(ev.MaxAttempts),
			piconv.RetryDelayMsKey.Float64(ev.DelayMs))
	}
	if ev.ErrorMessage != "" {
		attrs = append(attrs, piconv.RetryErrorKey.String(m.errorText(ev.ErrorMessage)))
	}
	if ev.Source != "" {
		attrs = append(attrs, piconv.RetrySourceKey.String(ev.Source))
	}
	var target trace.Span
	switch c := m.openCompaction(); {
	case c != nil:
		target = c
	case m.run != nil:
		target = m.run.innermost()
	default:
		m.anomaly(ev.Type + " with nothing open")
		return
	}
	target.AddEvent(piconv.EventSummarizationRetry, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

func (m *Mapper) retryStart(ev *event.Event, at time.Time) {
	r := m.ensureRun(at, "auto_retry_start")
	if r.retry != nil {
		m.endRetry(at, piconv.RetryFailed, "")
	}
	s := m.start(r.rootCtx, piconv.SpanRetry, trace.SpanKindInternal, at,
		piconv.RetryAttemptKey.Int(ev.Attempt),
		piconv.RetryMaxAttemptsKey.Int(ev.MaxAttempts),
		piconv.RetryDelayMsKey.Float64(ev.DelayMs),
		piconv.RetryErrorKey.String(m.errorText(ev.ErrorMessage)))
	r.retry = &s
	r.retries++
}

func (m *Mapper) retryEnd(ev *event.Event, at time.Time) {
	r := m.ensureRun(at, "auto_retry_end")
	if r.retry == nil {
		m.anomaly("auto_retry_end without auto_retry_start")
		m.retryStart(&event.Event{Attempt: ev.Attempt}, at)
	}
	outcome := piconv.RetryExhausted
	if ev.Success != nil && *ev.Success {
		outcome = piconv.RetrySuccess
	}
	m.endRetry(at, outcome, ev.FinalError)
}

func (m *Mapper) endRetry(at time.Time, outcome piconv.RetryOutcome, finalError string) {
	r := m.run
	s := r.retry
	attrs := []attribute.KeyValue{
		outcome.Attr(),
		piconv.RetrySuccessKey.Bool(outcome == piconv.RetrySuccess),
	}
	if finalError != "" {
		attrs = append(attrs, piconv.RetryFinalErrorKey.String(m.errorText(finalError)))
	}
	s.SetAttributes(attrs...)
	switch outcome {
	case piconv.RetryExhausted:
		s.SetStatus(codes.Error, "retries exhausted")
	case piconv.RetryUnfinished:
		s.SetAttributes(piconv.UnfinishedKey.Bool(true))
		s.SetStatus(codes.Error, "retry did not finish")
	}
	s.End(trace.WithTimestamp(at))
	r.retry = nil
}

func (m *Mapper) rootEvent(name string, at time.Time, attrs ...attribute.KeyValue) {
	if m.run == nil {
		m.stats.Anomalies["idle "+name]++
		return
	}
	m.run.root.AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

func (m *Mapper) currentEvent(name string, at time.Time, attrs ...attribute.KeyValue) {
	if m.run == nil {
		m.stats.Anomalies["idle "+name]++
		return
	}
	m.run.innermost().AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

func usageAttrs(u *event.Usage) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(int(u.Input + u.CacheRead + u.CacheWrite)),
		semconv.GenAIUsageOutputTokens(int(u.Output)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CacheRead)),
		semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWrite)),
	}
	if u.Reasoning > 0 {
		attrs = append(attrs, semconv.GenAIUsageReasoningOutputTokens(int(u.Reasoning)))
	}
	return attrs
}

func addUsage(dst, u *event.Usage) {
	dst.Input += u.Input
	dst.Output += u.Output
	dst.CacheRead += u.CacheRead
	dst.CacheWrite += u.CacheWrite
	dst.Reasoning += u.Reasoning
	dst.TotalTokens += u.TotalTokens
	dst.Cost.Input += u.Cost.Input
	dst.Cost.Output += u.Cost.Output
	dst.Cost.CacheRead += u.Cost.CacheRead
	dst.Cost.CacheWrite += u.Cost.CacheWrite
	dst.Cost.Total += u.Cost.Total
}

// errorText is what a span may say about a provider error: see errtext.
func (m *Mapper) errorText(msg string) string {
	if msg == "" {
		return ""
	}
	var s errtext.Scrubber
	if m.cfg.content != nil {
		s = m.cfg.content
	}
	return errtext.Text(msg, s, "")
}
