package vocab

import "go.opentelemetry.io/otel/attribute"

// Names that only a trace rebuilt from a session file carries
// (internal/session): what the file records and no stream record does.

// SpanBash is a command the user ran with ! in the TUI: user activity,
// not the model's.
const SpanBash = "pi.bash"

// Span events on the root of a run rebuilt from a session file.
const (
	EventUsage          = "pi.usage"
	EventBranchSummary  = "pi.branch_summary"
	EventModelChange    = "pi.model_change"
	EventLabel          = "pi.label"
	EventCustom         = "pi.custom"
	EventCustomMessage  = "pi.custom_message"
	EventUserImages     = "pi.user_images"
	EventUnknownEntry   = "pi.unknown_entry"
	EventUnknownMessage = "pi.unknown_message"
)

// Attribute keys of session-file traces (pi.link and the pi.bash keys
// shared with RPC's direct bash are in vocab.go).
const (
	CwdKey                 = attribute.Key("pi.cwd")
	BranchKey              = attribute.Key("pi.branch")
	BranchParentEntryIDKey = attribute.Key("pi.branch.parent_entry_id")
	BranchFromEntryIDKey   = attribute.Key("pi.branch.from_entry_id")
	SessionParentIDKey     = attribute.Key("pi.session.parent_id")
	UsageKindKey           = attribute.Key("pi.usage.kind")
	LabelKey               = attribute.Key("pi.label")
	LabelTargetIDKey       = attribute.Key("pi.label.target_id")
	LabelClearedKey        = attribute.Key("pi.label.cleared")
	CustomTypeKey          = attribute.Key("pi.custom.type")
	CustomDisplayKey       = attribute.Key("pi.custom.display")
	CustomContentKey       = attribute.Key("pi.custom.content")
	MessageImagesKey       = attribute.Key("pi.message.images")
	MessageRoleKey         = attribute.Key("pi.message.role")
	BashExcludedKey        = attribute.Key("pi.bash.excluded_from_context")
	BashCommandKey         = attribute.Key("pi.bash.command")
)

// Values of pi.link: why a run's root links to another run.
const (
	LinkBranchParent = "branch_parent"
	LinkForkOrigin   = "fork_origin"
	// LinkParentTool: a child session's run links to the execute_tool span
	// of the parent's tool that ran it.
	LinkParentTool = "parent_tool"
)
