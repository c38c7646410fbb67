// Package vocab is pi-otel's vocabulary: every span name, attribute key,
// span event, log record event and metric name that pi-otel writes, and
// the closed value sets, which the mapper, RPC tracing, the metrics, the
// console tree, the Collector configs, the dashboards and the tests read.
// The pi.* names are pi-otel's own. The GenAI names come in both forms:
// the v1.41 ones (semconv v1.41's constants, the default) and the ones
// the latest conventions add or rename (Latest rewrites one form into the
// other). SchemaURL is the one semconv version they all follow.
//
// docs/span-model.md is the human-readable form of this package; a test
// keeps the two equal.
package vocab

import (
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
)

// Span names with no variable part.
const (
	SpanRoot       = "invoke_agent pi"
	SpanAgentRun   = "pi.agent_run"
	SpanTurn       = "pi.turn"
	SpanRetry      = "pi.retry"
	SpanCompaction = "pi.compaction"
)

// A SpanFamily is the fixed part of the span names that a model, tool,
// command or method name completes: "chat claude-x", "execute_tool bash".
// (Not a trace.SpanKind: that is CLIENT, INTERNAL and so on.)
type SpanFamily string

// Span families. Each is the whole name when the variable part is unknown
// ("chat", "execute_tool").
const (
	SpanChat        SpanFamily = "chat"
	SpanTool        SpanFamily = "execute_tool"
	SpanAgent       SpanFamily = "invoke_agent" // a nested agent run: "invoke_agent scout"
	SpanRPC         SpanFamily = "pi.rpc"
	SpanExtensionUI SpanFamily = "pi.extension_ui"
)

// MaxNameDetail bounds the variable part of a span name. A span name is an
// index key in every backend; a model or tool name is short, and one that
// is not would otherwise be copied into every span name.
const MaxNameDetail = 128

// Prefix is the family with its separator, what every completed name starts
// with ("chat ").
func (k SpanFamily) Prefix() string { return string(k) + " " }

// Name completes the span name with detail, cut to MaxNameDetail bytes on a
// UTF-8 boundary so that the family always survives; an empty detail gives
// the family alone.
func (k SpanFamily) Name(detail string) string {
	if detail == "" {
		return string(k)
	}
	return k.Prefix() + Clip(detail, MaxNameDetail)
}

// Clip cuts s to at most n bytes without splitting a UTF-8 sequence.
func Clip(s string, n int) string {
	if n < 0 || len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Attribute keys of the root span (invoke_agent pi).
const (
	SettledKey         = attribute.Key("pi.settled")
	AbortedKey         = attribute.Key("pi.aborted")
	EndReasonKey       = attribute.Key("pi.end_reason") // also on RPC spans ended without their record
	OutcomeKey         = attribute.Key("pi.outcome")
	AgentRunsKey       = attribute.Key("pi.agent_runs")
	TurnsKey           = attribute.Key("pi.turns")
	ToolCallsKey       = attribute.Key("pi.tool_calls")
	ToolErrorsKey      = attribute.Key("pi.tool_errors")
	RetriesKey         = attribute.Key("pi.retries")
	CompactionsKey     = attribute.Key("pi.compactions")
	ExtensionErrorsKey = attribute.Key("pi.extension_errors")
	ExitCodeKey        = attribute.Key("pi.exit_code")
	SignalKey          = attribute.Key("pi.signal")
	ToolsEvictedKey    = attribute.Key("pi.tools_evicted")
	ProviderKey        = attribute.Key("pi.provider") // also on chat and pi.compaction
)

// Attribute keys of any span.
const (
	UnfinishedKey = attribute.Key("pi.unfinished")
	CostTotalKey  = attribute.Key("pi.cost.total")
	// ProjectKey is the last element of the session's cwd, on every span
	// of a run: cost per project without a full path.
	ProjectKey = attribute.Key("pi.project")
	// TeamKey is the team (--team) on the resource and on every span, a
	// label of the cost and token metrics.
	TeamKey = attribute.Key("pi.team")
	// PiVersionKey is the version of the Pi a live run launches, on the
	// resource.
	PiVersionKey = attribute.Key("pi.version")
	// SkillKey is the skill a tool call loads (a read of its SKILL.md),
	// and on a model call the skill its run loaded last; SkillsKey lists
	// on the root every skill the run loaded (reads and /skill:name).
	SkillKey  = attribute.Key("pi.skill")
	SkillsKey = attribute.Key("pi.skills")
	// SourceKey says a trace was rebuilt from a session file.
	SourceKey = attribute.Key("pi.source")
	// RetracedKey marks every span of a run traced a second time because
	// its first export failed: sent again under the same ids, counted
	// once (the span metrics and the report skip it).
	RetracedKey = attribute.Key("pi.retraced")
)

// SourceSessionFile is the pi.source of traces from a session file.
const SourceSessionFile = "session_file"

// Attribute keys of pi.agent_run and pi.turn.
const (
	AgentRunIndexKey  = attribute.Key("pi.agent_run.index")
	WillRetryKey      = attribute.Key("pi.will_retry")
	TurnIndexKey      = attribute.Key("pi.turn.index")
	TurnToolCallsKey  = attribute.Key("pi.turn.tool_calls")
	StopReasonKey     = attribute.Key("pi.stop_reason")
	RawStopReasonKey  = attribute.Key("pi.raw_stop_reason")
	DurationMsKey     = attribute.Key("pi.duration_ms")
	ToolDurationMsKey = attribute.Key("pi.tool.duration_ms")
	ToolUpdatesKey    = attribute.Key("pi.tool.updates")
	OrphanEndKey      = attribute.Key("pi.orphan_end")
)

// Attribute keys of nested agent runs: an invoke_agent span below the
// execute_tool span of a tool that ran other agents (Pi's subagent
// extension), the chat and tool spans inside it, and the nestedCalls a tool
// made. On that tool span and on the root, pi.nested.* sum what is below.
const (
	NestedDepthKey      = attribute.Key("pi.nested.depth")      // 1 for the tool's own children
	NestedIndexKey      = attribute.Key("pi.nested.index")      // position in the tool's results
	NestedModeKey       = attribute.Key("pi.nested.mode")       // single, parallel, chain (on the tool span)
	NestedTaskKey       = attribute.Key("pi.nested.task")       // content: only with capture
	NestedExitCodeKey   = attribute.Key("pi.nested.exit_code")  // the child process's
	NestedSessionIDKey  = attribute.Key("pi.nested.session_id") // the child's session, when read from its file
	NestedUsageFromKey  = attribute.Key("pi.nested.usage_from") // summary: the usage is the result entry's sum, its messages unknown
	NestedCallKey       = attribute.Key("pi.nested.call")       // a call another tool made (ctx.executeTool)
	NestedCallStatusKey = attribute.Key("pi.nested.call.status")
	NestedRunsKey       = attribute.Key("pi.nested.runs")        // tool span and root: nested runs, all depths
	NestedFailedRunsKey = attribute.Key("pi.nested.failed_runs") // of which failed
	NestedCostTotalKey  = attribute.Key("pi.nested.cost.total")  // their cost, within the root's pi.cost.total
	NestedDroppedKey    = attribute.Key("pi.nested.dropped")     // what the bounds cut (runs, items, calls, bad values)
	NestedClampedKey    = attribute.Key("pi.nested.clamped")     // spans whose times fell outside their parent
)

// Attribute keys of pi.compaction.
const (
	CompactionReasonKey       = attribute.Key("pi.compaction.reason")
	CompactionTokensBeforeKey = attribute.Key("pi.compaction.tokens_before")
	CompactionTokensAfterKey  = attribute.Key("pi.compaction.estimated_tokens_after")
	CompactionAbortedKey      = attribute.Key("pi.compaction.aborted")
	CompactionWillRetryKey    = attribute.Key("pi.compaction.will_retry")
	CompactionOutcomeKey      = attribute.Key("pi.compaction.outcome")
)

// Attribute keys of pi.retry and of the pi.summarization_retry event.
const (
	RetryAttemptKey     = attribute.Key("pi.retry.attempt")
	RetryMaxAttemptsKey = attribute.Key("pi.retry.max_attempts")
	RetryDelayMsKey     = attribute.Key("pi.retry.delay_ms")
	RetryErrorKey       = attribute.Key("pi.retry.error")
	RetrySuccessKey     = attribute.Key("pi.retry.success")
	RetryFinalErrorKey  = attribute.Key("pi.retry.final_error")
	RetryOutcomeKey     = attribute.Key("pi.retry.outcome")
	RetrySourceKey      = attribute.Key("pi.retry.source")
	PhaseKey            = attribute.Key("pi.phase")
)

// Attribute keys of the span events the mapper records.
const (
	MessageCharsKey    = attribute.Key("pi.message.chars")
	SystemSectionsKey  = attribute.Key("pi.system.sections")
	SystemToolCountKey = attribute.Key("pi.system.tool_count")
	QueueSteeringKey   = attribute.Key("pi.queue.steering")
	QueueFollowUpKey   = attribute.Key("pi.queue.follow_up")
	ThinkingLevelKey   = attribute.Key("pi.thinking_level")
	SessionNamedKey    = attribute.Key("pi.session.named")
	SessionNameKey     = attribute.Key("pi.session.name")
	EntryTypeKey       = attribute.Key("pi.entry.type")
	ExtensionPathKey   = attribute.Key("pi.extension.path")
	ExtensionEventKey  = attribute.Key("pi.extension.event")
	ExtensionErrorKey  = attribute.Key("pi.extension.error")
	EventTypeKey       = attribute.Key("pi.event.type")
)

// Attribute keys of the RPC spans (pi.rpc, pi.extension_ui) and their events.
const (
	RPCCommandKey     = attribute.Key("pi.rpc.command")
	RPCTypeKey        = attribute.Key("pi.rpc.type")
	RPCIDKey          = attribute.Key("pi.rpc.id")
	RPCSuccessKey     = attribute.Key("pi.rpc.success")
	RPCDispositionKey = attribute.Key("pi.rpc.disposition")
	RPCCancelledKey   = attribute.Key("pi.rpc.cancelled")
	BashChunksKey     = attribute.Key("pi.bash.output_chunks")
	BashBytesKey      = attribute.Key("pi.bash.output_bytes")
	BashExitCodeKey   = attribute.Key("pi.bash.exit_code")
	BashCancelledKey  = attribute.Key("pi.bash.cancelled")
	BashTruncatedKey  = attribute.Key("pi.bash.truncated")
	UIIDKey           = attribute.Key("pi.ui.id")
	UIMethodKey       = attribute.Key("pi.ui.method")
	UITimeoutMsKey    = attribute.Key("pi.ui.timeout_ms")
	UIOutcomeKey      = attribute.Key("pi.ui.outcome")
	UIConfirmedKey    = attribute.Key("pi.ui.confirmed")
	UINotifyTypeKey   = attribute.Key("pi.ui.notify_type")
	QueueKindKey      = attribute.Key("pi.queue.kind")
	LinkKey           = attribute.Key("pi.link")
)

// Span event names.
const (
	EventUserMessage        = "pi.user_message"
	EventSystemMessage      = "pi.system_message"
	EventQueueUpdate        = "pi.queue_update"
	EventThinkingLevel      = "pi.thinking_level_changed"
	EventSessionInfo        = "pi.session_info_changed"
	EventEntryAppended      = "pi.entry_appended"
	EventExtensionError     = "pi.extension_error"
	EventSummarizationRetry = "pi.summarization_retry"
	EventToolUpdate         = "pi.tool.update"
	EventUnknown            = "pi.unknown_event"
	EventRPCQueued          = "pi.rpc.queued"   // RPC only
	EventExtensionUI        = "pi.extension_ui" // RPC only: a fire-and-forget UI call
)

// Fixed values of a few attributes.
const (
	AgentName        = "pi"           // gen_ai.agent.name of the root
	NestedErrorType  = "agent_error"  // error.type of a failed nested run without an error message
	ToolTypeFunction = "function"     // gen_ai.tool.type of every execute_tool
	ToolErrorType    = "tool_error"   // error.type of a failed execute_tool
	LinkPreviousRun  = "previous_run" // pi.link on a command outside a run
	// NestedUsageFromSummary is pi.nested.usage_from on a nested run known
	// only by the usage its result entry sums (its session file is gone).
	NestedUsageFromSummary = "summary"
)

// Outcome is pi.outcome: how a settled (or abandoned) run ended.
type Outcome string

// Outcomes.
const (
	OutcomeOK        Outcome = "ok"
	OutcomeError     Outcome = "error"
	OutcomeAborted   Outcome = "aborted"
	OutcomeUnsettled Outcome = "unsettled"
)

// Attr is the attribute pi.outcome=o.
func (o Outcome) Attr() attribute.KeyValue { return OutcomeKey.String(string(o)) }

// EndReason is pi.end_reason: what closed a root (or an RPC span that
// never got its closing record).
type EndReason string

// End reasons.
const (
	EndSettled  EndReason = "settled"
	EndAgentEnd EndReason = "agent_end"
	EndSignal   EndReason = "signal"
	EndExit     EndReason = "exit"
	EndEOF      EndReason = "eof"
	EndEvicted  EndReason = "evicted" // RPC only: too many open commands or dialogs
)

// Attr is the attribute pi.end_reason=r.
func (r EndReason) Attr() attribute.KeyValue { return EndReasonKey.String(string(r)) }

// RetryOutcome is pi.retry.outcome.
type RetryOutcome string

// Retry outcomes.
const (
	RetrySuccess    RetryOutcome = "success"
	RetryFailed     RetryOutcome = "failed"
	RetryExhausted  RetryOutcome = "exhausted"
	RetryUnfinished RetryOutcome = "unfinished"
)

// Attr is the attribute pi.retry.outcome=o.
func (o RetryOutcome) Attr() attribute.KeyValue { return RetryOutcomeKey.String(string(o)) }

// CompactionOutcome is pi.compaction.outcome.
type CompactionOutcome string

// Compaction outcomes.
const (
	CompactionOK         CompactionOutcome = "ok"
	CompactionAborted    CompactionOutcome = "aborted"
	CompactionError      CompactionOutcome = "error"
	CompactionUnfinished CompactionOutcome = "unfinished"
)

// Attr is the attribute pi.compaction.outcome=o.
func (o CompactionOutcome) Attr() attribute.KeyValue {
	return CompactionOutcomeKey.String(string(o))
}

// UIOutcome is pi.ui.outcome: the kind of answer a dialog got.
type UIOutcome string

// Dialog outcomes.
const (
	UIConfirmed  UIOutcome = "confirmed"
	UIValue      UIOutcome = "value"
	UICancelled  UIOutcome = "cancelled"
	UITimedOut   UIOutcome = "timed_out"
	UIUnanswered UIOutcome = "unanswered"
)

// Attr is the attribute pi.ui.outcome=o.
func (o UIOutcome) Attr() attribute.KeyValue { return UIOutcomeKey.String(string(o)) }

// Disposition is pi.rpc.disposition: what Pi did with a prompt.
type Disposition string

// Dispositions.
const (
	DispositionStarted Disposition = "started"
	DispositionQueued  Disposition = "queued"
	DispositionHandled Disposition = "handled"
)

// QueueKind is pi.queue.kind on pi.rpc.queued.
type QueueKind string

// Queue kinds.
const (
	QueueSteer    QueueKind = "steer"
	QueueFollowUp QueueKind = "follow_up"
)

// ProviderName is gen_ai.provider.name for one of Pi's provider ids: the
// GenAI conventions' well-known value where the provider has one, else
// Pi's own id. Pi's id always goes in pi.provider as well.
func ProviderName(piProvider string) string {
	switch piProvider {
	case "amazon-bedrock":
		return "aws.bedrock"
	case "google":
		return "gcp.gemini"
	case "google-vertex":
		return "gcp.vertex_ai"
	case "azure", "azure-openai-responses": // azure-openai-responses before Pi 1.6
		return "azure.ai.openai"
	case "openai-codex":
		return "openai"
	case "xai":
		return "x_ai"
	case "mistral":
		return "mistral_ai"
	}
	// anthropic, openai, deepseek and groq are already the conventions'.
	return piProvider
}
