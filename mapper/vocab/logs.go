package vocab

// Log record event names: the event.name of each log record pi-otel emits
// for Pi's meaningful events (docs/span-model.md, Log records). Each record
// carries the trace and span ids of the span it belongs to, and the
// attributes that span (or, for a prompt, its span event) carries, so it
// obeys the same privacy rules.
const (
	LogUserPrompt        = "pi.user_prompt"         // a pi.user_message span event
	LogModelCallFinished = "pi.model_call.finished" // a chat span that ended well
	LogModelCallFailed   = "pi.model_call.failed"   // a chat span with status error
	LogToolResult        = "pi.tool.result"         // an execute_tool span
	LogRetry             = "pi.retry.finished"      // a pi.retry span
	LogCompaction        = "pi.compaction.finished" // a pi.compaction span
	LogDialogAnswered    = "pi.dialog.answered"     // a pi.extension_ui span the controller answered
	LogDialogUnanswered  = "pi.dialog.unanswered"   // a pi.extension_ui span that timed out or was cut
	LogRunSettled        = "pi.run.settled"         // a root span that settled
	LogRunCut            = "pi.run.cut"             // a root span closed without settling
)

// LogEvents returns every log record event name.
func LogEvents() []string {
	return []string{
		LogUserPrompt, LogModelCallFinished, LogModelCallFailed, LogToolResult, LogRetry,
		LogCompaction, LogDialogAnswered, LogDialogUnanswered, LogRunSettled, LogRunCut,
	}
}
