// Package event decodes the records Pi writes in json and rpc mode.
//
// Decoding is lazy: [Peek] finds a record's type without building anything,
// and [Decode] builds only the fields the mapper reads. message_update, by
// far the most frequent record, decodes just its assistantMessageEvent type
// and content index unless content capture asks for its delta.
package event

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Record types Pi 1.6.0 emits (docs/json.md, rpc.md, rpc-extension-ui.md).
const (
	TypeSession                    = "session"
	TypeAgentStart                 = "agent_start"
	TypeAgentEnd                   = "agent_end"
	TypeAgentSettled               = "agent_settled"
	TypeTurnStart                  = "turn_start"
	TypeTurnEnd                    = "turn_end"
	TypeMessageStart               = "message_start"
	TypeMessageUpdate              = "message_update"
	TypeMessageEnd                 = "message_end"
	TypeToolExecutionStart         = "tool_execution_start"
	TypeToolExecutionUpdate        = "tool_execution_update"
	TypeToolExecutionEnd           = "tool_execution_end"
	TypeQueueUpdate                = "queue_update"
	TypeEntryAppended              = "entry_appended"
	TypeSessionInfoChanged         = "session_info_changed"
	TypeThinkingLevelChanged       = "thinking_level_changed"
	TypeCompactionStart            = "compaction_start"
	TypeCompactionEnd              = "compaction_end"
	TypeAutoRetryStart             = "auto_retry_start"
	TypeAutoRetryEnd               = "auto_retry_end"
	TypeSummarizationRetrySchedule = "summarization_retry_scheduled"
	TypeSummarizationRetryAttempt  = "summarization_retry_attempt_start"
	TypeSummarizationRetryFinished = "summarization_retry_finished"

	// RPC-only records.
	TypeBashExecutionUpdate = "bash_execution_update"
	TypeExtensionError      = "extension_error"
	TypeExtensionUIRequest  = "extension_ui_request"
	TypeResponse            = "response"
)

// Errors a record can fail with. The record itself is never lost: the
// caller has already forwarded it; these only say why it is not traced.
var (
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	ErrInvalidJSON = errors.New("malformed JSON")
	ErrNotObject   = errors.New("not a JSON object")
	ErrNoType      = errors.New("no string \"type\" field")
	// ErrFieldDropped comes with a decoded Event: a field held a value its
	// Go type cannot take (a number out of range such as 1e999, or another
	// kind), so that field is left unset and the rest is kept.
	ErrFieldDropped = errors.New("field dropped")
)

// Event is one decoded record. Only the fields of its Type are set.
type Event struct {
	Type string

	// session header
	Version   int    `json:"version"`
	ID        string `json:"id"` // session id; bash_execution_update and extension_ui_request id
	Timestamp string `json:"timestamp"`
	Cwd       string `json:"cwd"`

	// agent_end, agent_settled
	Messages  []json.RawMessage `json:"messages"`
	WillRetry *bool             `json:"willRetry"`
	Aborted   *bool             `json:"aborted"`
	// IsTerminal is oh-my-pi's: its agent_end says whether the run is
	// over, and no agent_settled follows.
	IsTerminal *bool `json:"isTerminal"`

	// message_*, turn_end
	RawMessage            json.RawMessage        `json:"message"`
	Message               *Message               `json:"-"`
	ToolResults           []json.RawMessage      `json:"toolResults"`
	AssistantMessageEvent *AssistantMessageEvent `json:"assistantMessageEvent"`
	Usage                 *Usage                 `json:"usage"`

	// tool_execution_*
	ToolCallID    string          `json:"toolCallId"`
	ToolName      string          `json:"toolName"`
	Args          json.RawMessage `json:"args"`
	PartialResult json.RawMessage `json:"partialResult"`
	Result        json.RawMessage `json:"result"` // tool result, or compaction result
	IsError       bool            `json:"isError"`
	DurationMs    *float64        `json:"durationMs"`
	// ParentToolCallID is set on the tool_execution_* of a call another
	// tool made through ctx.executeTool() (Pi 1.6).
	ParentToolCallID string `json:"parentToolCallId"`
	// Skill is the skill a tool_execution_start loads (ReadSkill).
	Skill string `json:"-"`
	// BashCalls are the calls of Pi's bash tool the record asks for, with
	// Options.BashCalls: a tool_execution_start's, or an assistant
	// message's at its end (see BashCall).
	BashCalls []BashCall `json:"-"`

	// queue_update, entry_appended, session_info_changed, thinking_level_changed
	Steering []json.RawMessage `json:"steering"`
	FollowUp []json.RawMessage `json:"followUp"`
	Entry    json.RawMessage   `json:"entry"`
	Name     *string           `json:"name"`
	Level    string            `json:"level"`
	// EntryType names an entry_appended's entry: its type, and its
	// customType after a colon.
	EntryType string `json:"-"`
	// Compaction is a compaction_end's result, when it reads as one.
	Compaction *Compaction `json:"-"`

	// compaction_*, auto_retry_*, summarization_retry_*
	Reason       string  `json:"reason"`
	ErrorMessage string  `json:"errorMessage"`
	Attempt      int     `json:"attempt"`
	MaxAttempts  int     `json:"maxAttempts"`
	DelayMs      float64 `json:"delayMs"`
	Success      *bool   `json:"success"`
	FinalError   string  `json:"finalError"`
	Source       string  `json:"source"`

	// rpc records
	Delta         string          `json:"delta"`
	ExtensionPath string          `json:"extensionPath"`
	Event         string          `json:"event"`
	Error         string          `json:"error"`
	Method        string          `json:"method"`
	Command       string          `json:"command"`
	Data          json.RawMessage `json:"data"`
	TimeoutMs     float64         `json:"timeout"`
}

// Message is the part of Pi's AgentMessage the mapper reads
// (docs/message-types.md). Content stays raw: it is only decoded when the
// user opted into content capture.
type Message struct {
	Role          string          `json:"role"`
	Content       json.RawMessage `json:"content"`
	API           string          `json:"api"`
	Provider      string          `json:"provider"`
	Model         string          `json:"model"`
	ResponseModel string          `json:"responseModel"`
	ResponseID    string          `json:"responseId"`
	Usage         *Usage          `json:"usage"`
	StopReason    string          `json:"stopReason"`
	ErrorMessage  string          `json:"errorMessage"`
	RawStopReason string          `json:"rawStopReason"`
	DurationMs    *float64        `json:"durationMs"`
	Timestamp     float64         `json:"timestamp"` // epoch ms
	// oh-my-pi's timing of an assistant message, in place of durationMs:
	// the call's duration and time to first token (ms), and when it
	// completed (epoch ms). See CallTime.
	Duration      *float64 `json:"duration"`
	TTFT          *float64 `json:"ttft"`
	CompletedAt   float64  `json:"completedAt"`
	ThinkingLevel string   `json:"thinkingLevel"`

	// toolResult
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	IsError    bool   `json:"isError"`

	// system
	Sections   map[string]*string `json:"sections"`
	ToolsAdded []json.RawMessage  `json:"toolsAdded"`
	Tools      []json.RawMessage  `json:"tools"`
	// ToolDefs are the declarations of Tools and ToolsAdded, in that
	// order, that name a tool (NoteFacts).
	ToolDefs []ToolDef `json:"-"`
	// Ordered are a system message's sections in the message's key
	// order, with their raw values (NoteFacts).
	Ordered []Section `json:"-"`

	// Raw is the message as Pi sent it, for opt-in content capture.
	Raw json.RawMessage `json:"-"`
	// Skill is the skill a user message's /skill:name expansion loads
	// (PromptSkill).
	Skill string `json:"-"`
	// TextChars is ContentChars(Content) of a user message, counted by the
	// decoder (NoteFacts), so that a reader may drop Content and the
	// mapper need not scan it.
	TextChars int `json:"-"`
}

// Usage is Pi's token and cost accounting for one assistant response.
type Usage struct {
	Input       int64 `json:"input"`
	Output      int64 `json:"output"`
	CacheRead   int64 `json:"cacheRead"`
	CacheWrite  int64 `json:"cacheWrite"`
	Reasoning   int64 `json:"reasoning"`
	TotalTokens int64 `json:"totalTokens"`
	Cost        Cost  `json:"cost"`
}

// Add adds o's tokens and cost to u.
func (u *Usage) Add(o *Usage) {
	u.Input += o.Input
	u.Output += o.Output
	u.CacheRead += o.CacheRead
	u.CacheWrite += o.CacheWrite
	u.Reasoning += o.Reasoning
	u.TotalTokens += o.TotalTokens
	u.Cost.Input += o.Cost.Input
	u.Cost.Output += o.Cost.Output
	u.Cost.CacheRead += o.Cost.CacheRead
	u.Cost.CacheWrite += o.Cost.CacheWrite
	u.Cost.Total += o.Cost.Total
}

// Cost is in USD.
type Cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
	Total      float64 `json:"total"`
}

// AssistantMessageEvent is the nested event of a message_update.
type AssistantMessageEvent struct {
	Type         string `json:"type"`
	ContentIndex int    `json:"contentIndex"`
	Delta        string `json:"delta"`
	ID           string `json:"id"`
	ToolName     string `json:"toolName"`
}

// Options tune decoding.
type Options struct {
	// Content keeps message_update deltas. Off, they are skipped unread.
	Content bool
	// BashCalls reads the bash calls a record asks for into
	// Event.BashCalls. Off, nothing is spent on them.
	BashCalls bool
	// Transient lets a Decoder decode each record's Message, with its
	// Usage and durations, into storage it reuses, as it reuses the
	// Event: they are valid until the next Decode. For a caller that
	// copies what it keeps of them.
	Transient bool
	// NoDeclarations leaves a system message's ToolDefs and Ordered
	// unset, for a caller that drops them (a session without content
	// capture): reading them costs a decode of every tool declaration.
	NoDeclarations bool
}

// updateLite is what a message_update costs when content is off. A
// 0.73-era update also carries a cumulative "message" snapshot; it is
// deliberately absent here so that it is skipped, not built.
type updateLite struct {
	AssistantMessageEvent struct {
		Type         string `json:"type"`
		ContentIndex int    `json:"contentIndex"`
	} `json:"assistantMessageEvent"`
	HasMessage json.RawMessage `json:"message"`
}

// Decode validates one record and decodes it. A record that fails is
// reported with one of the Err* values wrapped with detail; with
// ErrFieldDropped the Event is decoded all the same, but for one field.
//
// Duplicate keys take the last value, as JSON.parse and encoding/json do.
//
// Validation is one hand-written pass that accepts exactly what
// utf8.Valid and json.Valid accept; the fields are then read from the
// offsets it recorded. Records of a shape that pass does not decode (keys
// that match a field only ignoring case or after unescaping, duplicate
// keys, values of unexpected kinds) go through encoding/json, so the
// result is always what encoding/json gives.
func Decode(rec []byte, opts Options) (Event, error) {
	var s scan
	var ev Event
	err := decode(rec, opts, &s, &ev, nil, false)
	return ev, err
}

// Decoder decodes records like [Decode] but reuses its storage and does
// not copy raw JSON, so that a message_update costs no allocation and a
// multi-megabyte tool output is not duplicated. It is not safe for
// concurrent use.
type Decoder struct {
	opts Options
	s    scan
	ev   Event
	st   storage
	// valid says the last record was a valid object, so s holds its
	// members (Member).
	valid bool
}

// NewDecoder returns a Decoder.
func NewDecoder(opts Options) *Decoder {
	d := &Decoder{opts: opts}
	d.s.caching = true
	d.st.transient = opts.Transient
	return d
}

// Decode decodes rec. The Event is valid until the next call, and its
// json.RawMessage fields (RawMessage, Result, Args, Messages, a Message's
// Content and Raw, …) may point into rec: they are valid only as long as
// rec is unchanged. Strings are always copies.
func (d *Decoder) Decode(rec []byte) (*Event, error) {
	d.ev = Event{}
	err := decode(rec, d.opts, &d.s, &d.ev, &d.st, true)
	d.valid = err == nil || errors.Is(err, ErrFieldDropped)
	return &d.ev, err
}

// Member returns the value of the top-level member name of rec, the record
// Decode last decoded, from the offsets its scan recorded: for a field
// Event does not carry (a session entry's parentId), without a second
// walk. v is nil when there is no such member. ok is false when the scan
// cannot tell as encoding/json would: the record was no valid object, had
// more members than the scan records, or spells name twice, with escapes
// or in another case.
func (d *Decoder) Member(rec []byte, name string) (v []byte, ok bool) {
	if !d.valid || d.s.overflow {
		return nil, false
	}
	for k := range d.s.n {
		m := &d.s.members[k]
		key := rec[m.keyStart:m.keyEnd]
		switch {
		case string(key) == name:
			if v != nil {
				return nil, false // a duplicate: the last one wins
			}
			v = rec[m.valStart:m.valEnd]
		case !plainKey(key) || Key(key, name):
			return nil, false
		}
	}
	return v, true
}

// MessageMembers calls fn with each top-level member of the message of
// rec, the record Decode last decoded, as long as fn returns true: the key
// as written (escapes and all) and the value, from the offsets its scan
// recorded. ok is false, and fn not called, when the scan has not them
// all, or cannot tell which member encoding/json reads as the message
// (see Member).
func (d *Decoder) MessageMembers(rec []byte, fn func(key, v []byte) bool) (ok bool) {
	if v, ok := d.Member(rec, "message"); !ok || v == nil || !d.s.msg.valid {
		return false
	}
	for k := range d.s.msg.n {
		m := &d.s.msg.m[k]
		if !fn(rec[m.keyStart:m.keyEnd], rec[m.valStart:m.valEnd]) {
			break
		}
	}
	return true
}

func decode(rec []byte, opts Options, s *scan, ev *Event, st *storage, alias bool) error {
	err := decodeRecord(rec, opts, s, ev, st, alias)
	if err == nil || errors.Is(err, ErrFieldDropped) {
		ev.noteFacts(opts)
		ev.noteSkills()
		if opts.BashCalls {
			ev.noteBashCalls()
		}
	}
	return err
}

func decodeRecord(rec []byte, opts Options, s *scan, ev *Event, st *storage, alias bool) error {
	typ, fast, err := peek(rec, s)
	if err != nil {
		return err
	}
	if fast {
		if typ == TypeMessageUpdate && !opts.Content {
			var ame *AssistantMessageEvent
			if st != nil {
				ame = &st.ame
			}
			if s.decodeLite(rec, ev, ame, alias) {
				return nil
			}
		} else if s.decodeFull(rec, typ, ev, alias, st) {
			return nil
		}
		*ev = Event{}
	}
	*ev, err = decodeSlow(rec, typ, opts)
	return err
}

// decodeSlow decodes a valid record of type typ with encoding/json.
func decodeSlow(rec []byte, typ string, opts Options) (Event, error) {
	ev := Event{Type: typ}
	if typ == TypeMessageUpdate && !opts.Content {
		var u updateLite
		err := dropped(json.Unmarshal(rec, &u), "")
		ev.AssistantMessageEvent = &AssistantMessageEvent{Type: u.AssistantMessageEvent.Type, ContentIndex: u.AssistantMessageEvent.ContentIndex}
		if len(u.HasMessage) > 0 {
			// Only presence matters: it marks the pre-1.x protocol.
			ev.RawMessage = u.HasMessage
		}
		return ev, err
	}
	// The record is valid JSON, so the only error left is a value that does
	// not fit its field; encoding/json skips that field, keeps the rest and
	// reports the first such one.
	uerr := json.Unmarshal(rec, &ev)
	switch f := typeErrorField(uerr); f {
	case "Type":
		uerr = nil // a duplicate "type" that is not a string: peek chose
	default:
		ev.clearPointer(f)
	}
	err := dropped(uerr, "")
	ev.Type = typ
	// turn_end repeats the assistant message that message_end already gave.
	if len(ev.RawMessage) > 0 && typ != TypeTurnEnd && typ != TypeMessageUpdate && string(ev.RawMessage) != "null" {
		var msg Message
		merr := json.Unmarshal(ev.RawMessage, &msg)
		if err == nil {
			err = dropped(merr, "message: ")
		}
		switch typeErrorField(merr) {
		case "":
			if merr != nil {
				// Not an object: the message is dropped, the event kept.
				return ev, err
			}
		case "durationMs":
			msg.DurationMs = nil
		case "duration":
			msg.Duration = nil
		case "ttft":
			msg.TTFT = nil
		}
		msg.Raw = ev.RawMessage
		ev.Message = &msg
	}
	return ev, err
}

// dropped turns encoding/json's report of a field it skipped into
// ErrFieldDropped.
func dropped(err error, where string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %s%v", ErrFieldDropped, where, err)
}

// typeErrorField is the JSON path of the field encoding/json skipped.
func typeErrorField(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field
	}
	return ""
}

// clearPointer unsets the optional field encoding/json skipped: it has
// already allocated the pointer, and a zero would read as a real value.
func (ev *Event) clearPointer(field string) {
	switch field {
	case "durationMs":
		ev.DurationMs = nil
	case "willRetry":
		ev.WillRetry = nil
	case "isTerminal":
		ev.IsTerminal = nil
	case "aborted":
		ev.Aborted = nil
	case "success":
		ev.Success = nil
	case "name":
		ev.Name = nil
	}
}

// Peek validates rec as a JSON object and returns its top-level "type".
func Peek(rec []byte) (string, error) {
	var s scan
	typ, _, err := peek(rec, &s)
	return typ, err
}

// peek validates rec and finds its type; fast reports whether the scan
// alone could tell, which also means the fast decoders may run.
func peek(rec []byte, s *scan) (typ string, fast bool, err error) {
	if err := s.validate(rec); err != nil {
		return "", false, err
	}
	if !s.object {
		return "", false, ErrNotObject
	}
	if typ, ok := s.recordType(rec); ok {
		return typ, true, nil
	}
	// Unusual keys (a duplicate "type", escapes, case variants):
	// encoding/json decides, and of duplicates the last one wins.
	typ, err = headType(rec)
	return typ, false, err
}

// headType is the record's "type" as JSON.parse reads it: the last key
// that spells it (encoding/json also folds case), when its value is a
// string.
func headType(rec []byte) (string, error) {
	var head struct {
		Type json.RawMessage `json:"type"`
	}
	var typ string
	if json.Unmarshal(rec, &head) != nil || json.Unmarshal(head.Type, &typ) != nil {
		return "", ErrNoType
	}
	return typ, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
