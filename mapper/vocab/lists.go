package vocab

import "go.opentelemetry.io/otel/attribute"

// The lists below let tests and tools check a name against the vocabulary
// (a dashboard query, a Collector config, the span-model document). A test
// parses this package's source to keep them complete.

// Spans returns the span names that have no variable part.
func Spans() []string {
	return []string{SpanRoot, SpanAgentRun, SpanTurn, SpanRetry, SpanCompaction, SpanBash}
}

// Families returns the span families, whose names a detail completes.
func Families() []SpanFamily {
	return []SpanFamily{SpanChat, SpanTool, SpanAgent, SpanRPC, SpanExtensionUI}
}

// Events returns the span event names.
func Events() []string {
	return []string{
		EventUserMessage, EventSystemMessage, EventQueueUpdate, EventThinkingLevel,
		EventSessionInfo, EventEntryAppended, EventExtensionError, EventSummarizationRetry,
		EventToolUpdate, EventUnknown, EventRPCQueued, EventExtensionUI,
		EventUsage, EventBranchSummary, EventModelChange, EventLabel, EventCustom,
		EventCustomMessage, EventUserImages, EventUnknownEntry, EventUnknownMessage,
	}
}

// Keys returns every pi.* attribute key.
func Keys() []attribute.Key {
	return []attribute.Key{
		SettledKey, AbortedKey, EndReasonKey, OutcomeKey, AgentRunsKey, TurnsKey, ToolCallsKey,
		ToolErrorsKey, RetriesKey, CompactionsKey, ExtensionErrorsKey, ExitCodeKey, SignalKey,
		ToolsEvictedKey, ProviderKey,
		UnfinishedKey, CostTotalKey, ProjectKey, TeamKey, PiVersionKey, SkillKey, SkillsKey, SourceKey,
		RetracedKey,
		CwdKey, BranchKey, BranchParentEntryIDKey, BranchFromEntryIDKey, SessionParentIDKey,
		UsageKindKey, LabelKey, LabelTargetIDKey, LabelClearedKey, CustomTypeKey,
		CustomDisplayKey, CustomContentKey, MessageImagesKey, MessageRoleKey, BashExcludedKey,
		BashCommandKey,
		AgentRunIndexKey, WillRetryKey, TurnIndexKey, TurnToolCallsKey, StopReasonKey,
		RawStopReasonKey, DurationMsKey, ToolDurationMsKey, ToolUpdatesKey, OrphanEndKey,
		CompactionReasonKey, CompactionTokensBeforeKey, CompactionTokensAfterKey,
		CompactionAbortedKey, CompactionWillRetryKey, CompactionOutcomeKey,
		RetryAttemptKey, RetryMaxAttemptsKey, RetryDelayMsKey, RetryErrorKey, RetrySuccessKey,
		RetryFinalErrorKey, RetryOutcomeKey, RetrySourceKey, PhaseKey,
		MessageCharsKey, SystemSectionsKey, SystemToolCountKey, QueueSteeringKey,
		QueueFollowUpKey, ThinkingLevelKey, SessionNamedKey, SessionNameKey, EntryTypeKey,
		ExtensionPathKey, ExtensionEventKey, ExtensionErrorKey, EventTypeKey,
		RPCCommandKey, RPCTypeKey, RPCIDKey, RPCSuccessKey, RPCDispositionKey, RPCCancelledKey,
		BashChunksKey, BashBytesKey, BashExitCodeKey, BashCancelledKey, BashTruncatedKey,
		UIIDKey, UIMethodKey, UITimeoutMsKey, UIOutcomeKey, UIConfirmedKey, UINotifyTypeKey,
		QueueKindKey, LinkKey,
		NestedDepthKey, NestedIndexKey, NestedModeKey, NestedTaskKey, NestedExitCodeKey, NestedSessionIDKey, NestedUsageFromKey,
		NestedCallKey, NestedCallStatusKey, NestedRunsKey, NestedFailedRunsKey,
		NestedCostTotalKey, NestedDroppedKey, NestedClampedKey,
		ContentOmittedMessagesKey, ContentOverBudgetKey, ContentBytesKey, CompactionSummaryCallKey,
	}
}

// Values returns the closed set of values key takes, or nil when its
// values are open (a count, a name, an id).
func Values(key attribute.Key) []string {
	switch key {
	case OutcomeKey:
		return strs(OutcomeOK, OutcomeError, OutcomeAborted, OutcomeUnsettled)
	case EndReasonKey:
		return strs(EndSettled, EndAgentEnd, EndSignal, EndExit, EndEOF, EndEvicted)
	case RetryOutcomeKey:
		return strs(RetrySuccess, RetryFailed, RetryExhausted, RetryUnfinished)
	case CompactionOutcomeKey:
		return strs(CompactionOK, CompactionAborted, CompactionError, CompactionUnfinished)
	case UIOutcomeKey:
		return strs(UIConfirmed, UIValue, UICancelled, UITimedOut, UIUnanswered)
	case RPCDispositionKey:
		return strs(DispositionStarted, DispositionQueued, DispositionHandled)
	case QueueKindKey:
		return strs(QueueSteer, QueueFollowUp)
	case LinkKey:
		return []string{LinkPreviousRun, LinkParentTool, LinkBranchParent, LinkForkOrigin}
	case NestedUsageFromKey:
		return []string{NestedUsageFromSummary}
	}
	return nil
}

func strs[T ~string](vs ...T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
