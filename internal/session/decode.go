package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
)

// Entry types of Pi's session format (docs/session-format.md).
const (
	typeSession       = "session"
	typeMessage       = "message"
	typeModelChange   = "model_change"
	typeThinking      = "thinking_level_change"
	typeUsage         = "usage"
	typeCompaction    = "compaction"
	typeContextEdit   = "context_edit"
	typeBranchSummary = "branch_summary"
	typeCustom        = "custom"
	typeCustomMessage = "custom_message"
	typeLabel         = "label"
	typeSessionInfo   = "session_info"
	// oh-my-pi's: a title slot before the header, and the spend of a side
	// call (a title, a summary), in place of Pi's usage entry.
	typeTitle      = "title"
	typeModelUsage = "model_usage"
)

// knownEntry lists the entry types this version understands; others are
// counted in Stats.Unknown and kept in the tree (they still have ids).
var knownEntry = map[string]bool{
	typeMessage: true, typeModelChange: true, typeThinking: true, typeUsage: true, typeModelUsage: true,
	typeCompaction: true, typeContextEdit: true, typeBranchSummary: true, typeCustom: true,
	typeCustomMessage: true, typeLabel: true, typeSessionInfo: true,
}

// looseBool is a boolean as untyped extensions write it: true or false,
// also as a string or as 0 and 1. Any other value reads as absent (bad).
// Unmarshalers that fail stop encoding/json, so it never fails.
type looseBool struct {
	v   *bool
	bad bool
}

func (l *looseBool) UnmarshalJSON(b []byte) error {
	var v bool
	switch strings.Trim(string(b), `"`) {
	case "true", "1":
		v = true
	case "false", "0":
	case "null":
		return nil
	default:
		l.bad = true
		return nil
	}
	l.v = &v
	return nil
}

// message is the AgentMessage of a message entry: what the stream decoder
// reads, plus the fields of message kinds only the file has.
type message struct {
	event.Message
	// bashExecution: a command the user ran with ! in the TUI (or RPC bash).
	Command    string    `json:"command"`
	ExitCode   *int      `json:"exitCode"`
	Cancelled  bool      `json:"cancelled"`
	Truncated  bool      `json:"truncated"`
	ExcludeCtx bool      `json:"excludeFromContext"`
	CustomType string    `json:"customType"`
	Display    looseBool `json:"display"`

	// bashCalls are an assistant message's bash calls, read by the decoder
	// when Config.BashCalls asks, until FileMapper.feed hands them on.
	bashCalls []event.BashCall
	// callIDs and callNames are an assistant message's tool calls, read once;
	// callSkills, when one loads a skill, the skill of each (ReadSkill).
	callIDs, callNames, callSkills []string
	// images counts the image blocks of a user or custom message.
	images int
	// nested is what a toolResult carries (subagent runs, usage,
	// nestedCalls), read while the raw message is at hand.
	nested *nested.Result
}

// summarize reads from the content what spans need of it whether or not
// content is captured: the tool calls, the images.
func (m *message) summarize() {
	switch m.Role {
	case "assistant":
		m.callIDs, m.callNames = toolCalls(m.Content)
		m.callSkills = callSkills(m.Content, m.callIDs, m.callNames)
	case "user", "custom":
		m.images = imageCount(m.Content)
		if m.Role == "user" && m.Skill == "" {
			m.Skill = event.PromptSkill(m.Content)
		}
	}
}

// drop forgets the content and raw JSON of a summarized message, without
// content capture: a prompt, an answer, a tool call's arguments, an image
// or a tool's output can be hundreds of megabytes, and an entry is held
// until its run is traced. A prompt keeps the length of its text.
func (m *message) drop() {
	m.Raw, m.Content = nil, nil
}

// readNested keeps what a toolResult message carries for the mapper; the
// raw message itself is not kept without content capture. nothing says
// the message's members were seen to carry nothing (nested.MemberCarries):
// then it is not searched.
func (m *message) readNested(sessions nested.SessionReader, from nested.Origin, nothing bool) {
	if m.Role == "toolResult" && !nothing && nested.Probe(m.Raw) {
		m.nested = nested.ParseWith(m.Raw, nested.DefaultLimits, sessions, from)
	}
}

// entry is one decoded session entry.
type entry struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp string          `json:"timestamp"`
	RawMsg    json.RawMessage `json:"message"`

	// model_change, usage, model_usage
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
	Model    string `json:"model"`
	Kind     string `json:"kind"`
	Purpose  string `json:"purpose"` // model_usage's kind

	// thinking_level_change
	ThinkingLevel string `json:"thinkingLevel"`
	// compaction, branch_summary, usage
	Usage        *event.Usage `json:"usage"`
	TokensBefore *int64       `json:"tokensBefore"`
	FromHook     *bool        `json:"fromHook"`
	FromID       string       `json:"fromId"`
	// context_edit, label
	TargetID string  `json:"targetId"`
	Label    *string `json:"label"`
	// session_info
	Name *string `json:"name"`
	// custom, custom_message
	CustomType string          `json:"customType"`
	Content    json.RawMessage `json:"content"`
	Display    looseBool       `json:"display"`
	images     int             // image blocks in Content

	// Filled in after decoding.
	msg      *message
	idh      uint64    // idHash(ID), once ID is final
	mistyped bool      // a field of another type than Pi writes was left out
	persist  time.Time // the entry's timestamp: when Pi wrote it
	off      int64     // byte offset of the line
	end      int64     // offset just past the line and its LF
}

// parent is the entry's parentId, "" for a root.
func (e *entry) parent() string {
	if e.ParentID == nil {
		return ""
	}
	return *e.ParentID
}

var (
	errDamaged  = errors.New("damaged line")
	errNoObject = errors.New("not a JSON object with a type")
)

// isObject reports whether b, valid JSON, is an object.
func isObject(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// tolerable reports whether err from json.Unmarshal into a struct leaves
// an entry worth keeping: none, or fields of unexpected types only, which
// encoding/json skips while it decodes the rest. Real files carry such
// fields (an extension's display as a string): an entry is not damaged
// for them, and the entries below it stay on its branch.
func tolerable(err error) bool {
	var te *json.UnmarshalTypeError
	return err == nil || errors.As(err, &te)
}

// decoder decodes entry lines. Message entries, nearly all of a file's
// bytes, go through the event package's single-pass decoder; the rest, and
// lines of unusual shape, through encoding/json.
type decoder struct {
	ev      *event.Decoder
	content bool // keep raw messages, for content capture
	calls   bool // read bash calls (Config.BashCalls)
	// sessions reads the child session files tool results name; nil
	// leaves them unread. from is the file they are named in, and Pi's
	// cwd once the header is read: what relative names resolve against.
	sessions nested.SessionReader
	from     nested.Origin
}

func newDecoder(content, calls bool) *decoder {
	// fast copies what it keeps of a message; without content capture it
	// drops the declarations of tools and sections.
	opts := event.Options{BashCalls: calls, Transient: true, NoDeclarations: !content}
	return &decoder{ev: event.NewDecoder(opts), content: content, calls: calls}
}

// decode decodes one entry line. A line that is not one JSON object (two
// objects on a line, a broken escape, a cut-off write) is errDamaged.
// Nothing returned aliases b.
func (d *decoder) decode(b []byte) (*entry, error) {
	b = bytes.TrimRight(b, "\r")
	if d.content {
		// What a message keeps for capture, its raw JSON and its content,
		// then points into one copy of the line, not into two of its parts.
		b = bytes.Clone(b)
	}
	ev, err := d.ev.Decode(b)
	var fast *entry
	if err == nil {
		fast, _ = d.fast(b, ev)
	}
	// The event points into b, the caller's: kept, it would keep a huge
	// line's buffer alive until the next line. So would its message, the
	// decoder's own storage (Transient).
	if ev.Message != nil {
		*ev.Message = event.Message{}
	}
	*ev = event.Event{}
	if errors.Is(err, event.ErrInvalidUTF8) {
		return nil, errDamaged // Pi writes UTF-8: this line was cut or corrupted
	}
	if fast != nil {
		return fast, nil
	}
	// Fields of shapes a stream record would not have (an entry is not
	// one), or lines of unusual shape: encoding/json decides. The scan
	// has found the line valid JSON unless it said otherwise.
	e, err := decodeEntryChecked(b, d.sessions, d.from, !errors.Is(err, event.ErrInvalidJSON))
	if err == nil && d.calls && e.msg != nil && e.msg.Role == "assistant" {
		e.msg.bashCalls = event.BashCalls(e.msg.Content)
	}
	if err == nil && !d.content {
		e.RawMsg, e.Content = nil, nil
		if e.msg != nil {
			e.msg.drop()
		}
	}
	return e, err
}

// fast builds a message entry of the common roles from the event decoder's
// result; ok is false when the line needs the full decoder.
func (d *decoder) fast(b []byte, ev *event.Event) (*entry, bool) {
	if ev.Type != typeMessage || ev.Message == nil {
		return nil, false
	}
	switch ev.Message.Role {
	case "user", "assistant", "toolResult", "system":
	default:
		return nil, false // bashExecution, custom: fields the event decoder skips
	}
	v, ok := d.ev.Member(b, "parentId")
	if !ok {
		return nil, false
	}
	f := new(fastEntry)
	if !parentOf(v, &f.parent, &f.e.ParentID) {
		return nil, false
	}
	e, m := &f.e, &f.m
	e.Type, e.ID, e.Timestamp, e.msg = typeMessage, ev.ID, ev.Timestamp, m
	m.Message, m.bashCalls = *ev.Message, ev.BashCalls
	// The decoder's message and what it points to are its own, reused.
	if m.Usage != nil {
		f.usage, m.Usage = *m.Usage, &f.usage
	}
	for i, p := range []**float64{&m.DurationMs, &m.Duration, &m.TTFT} {
		if *p != nil {
			f.durations[i], *p = **p, &f.durations[i]
		}
	}
	m.readNested(d.sessions, d.from, m.Role == "toolResult" && d.carriesNothing(b, m))
	m.summarize()
	// The decoder's raw fields point into b: the caller's, which it
	// reuses, unless content is captured (see decode).
	if !d.content {
		m.drop()
		// Only the number of tool declarations is read.
		m.ToolsAdded, m.Tools = blanks(m.ToolsAdded), blanks(m.Tools)
		m.ToolDefs, m.Ordered = nil, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
		e.persist = t
	}
	return e, true
}

// carriesNothing reports whether the message m of line b, as the event
// decoder's scan recorded its members, carries nothing nested: most tool
// results, whose output is then not searched again.
func (d *decoder) carriesNothing(b []byte, m *message) bool {
	if len(m.Raw) > nested.DefaultLimits.MaxBytes {
		return false // counted as oversize, if Probe finds a key
	}
	carries := false
	known := d.ev.MessageMembers(b, func(k, v []byte) bool {
		carries = nested.MemberCarries(k, v)
		return !carries
	})
	return known && !carries
}

// fastEntry is a message entry as fast builds it: the entry, its message
// and what they point to, in one allocation, since they live as long.
type fastEntry struct {
	e         entry
	m         message
	parent    string
	usage     event.Usage
	durations [3]float64
}

// blanks is as many empty declarations as in has.
func blanks(in []json.RawMessage) []json.RawMessage {
	if in == nil {
		return nil
	}
	return make([]json.RawMessage, len(in))
}

// parentOf reads an entry's parentId from its value v (nil: absent) into
// s, and points dst at s unless it is absent or null; it reports false
// for a value of another kind, which encoding/json reports.
func parentOf(v []byte, s *string, dst **string) bool {
	switch {
	case v == nil || string(v) == "null":
		return true
	case !event.ReadString(v, s):
		return false
	}
	*dst = s
	return true
}

// decodeEntryChecked decodes one entry line with encoding/json, reading
// child session files with sessions, named in from; valid says b is known
// to be valid JSON (the event decoder's scan, which json.Valid agrees
// with, accepted it), so that it is not checked again.
func decodeEntryChecked(b []byte, sessions nested.SessionReader, from nested.Origin, valid bool) (*entry, error) {
	b = bytes.TrimRight(b, "\r")
	if !valid && !json.Valid(b) {
		return nil, errDamaged
	}
	e := &entry{}
	err := json.Unmarshal(b, e)
	if !isObject(b) || !tolerable(err) || e.Type == "" {
		// Valid JSON of the wrong shape: not an object, or one without a type.
		return nil, errNoObject
	}
	e.mistyped = err != nil || e.Display.bad
	if e.Type == typeMessage && len(e.RawMsg) > 0 && string(e.RawMsg) != "null" {
		m := &message{}
		err := json.Unmarshal(e.RawMsg, m)
		if !isObject(e.RawMsg) || !tolerable(err) {
			return nil, errNoObject
		}
		e.mistyped = e.mistyped || err != nil || m.Display.bad
		if m.Role == "hookMessage" { // version 2 name, renamed in version 3
			m.Role = "custom"
		}
		m.Raw = e.RawMsg
		m.NoteFacts()
		m.readNested(sessions, from, false)
		m.summarize()
		e.msg = m
	}
	if e.Type == typeCustomMessage {
		e.images = imageCount(e.Content)
	}
	if t, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
		e.persist = t
	}
	return e, nil
}

// msgTime is a message's own epoch-ms timestamp.
func msgTime(ms float64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	sec := int64(ms / 1000)
	return time.Unix(sec, int64((ms-float64(sec)*1000)*float64(time.Millisecond)))
}

// toolCalls lists the ids and names of an assistant message's tool calls.
func toolCalls(content json.RawMessage) (ids, names []string) {
	if len(content) == 0 || content[0] != '[' || !bytes.Contains(content, []byte(`"toolCall"`)) {
		return nil, nil
	}
	if ids, names, ok := event.ToolCalls(content); ok {
		return ids, names
	}
	var blocks []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return nil, nil
	}
	for _, b := range blocks {
		if b.Type == "toolCall" {
			ids = append(ids, b.ID)
			names = append(names, b.Name)
		}
	}
	return ids, names
}

// toolArgs returns the arguments of the tool call id in content.
func toolArgs(content json.RawMessage, id string) json.RawMessage {
	var blocks []struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return nil
	}
	for _, b := range blocks {
		if b.Type == "toolCall" && b.ID == id {
			return b.Arguments
		}
	}
	return nil
}

// imageCount counts image blocks in a message's content.
func imageCount(content json.RawMessage) int {
	if len(content) == 0 || content[0] != '[' {
		return 0
	}
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return 0
	}
	n := 0
	for _, b := range blocks {
		if b.Type == "image" {
			n++
		}
	}
	return n
}

// originID is the session id in a parentSession path
// (…/<timestamp>_<id>.jsonl); "" if the name has no such shape.
func originID(path string) string {
	base := path
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.TrimSuffix(base, ".jsonl")
	_, id, ok := strings.Cut(base, "_")
	if !ok {
		return ""
	}
	return id
}

// callSkills is the skill each tool call of an assistant message loads
// (event.ReadSkill), or nil when none reads a SKILL.md: read while the
// content is at hand, since without content capture it is not kept.
func callSkills(content json.RawMessage, ids, names []string) []string {
	if !slices.Contains(names, "read") || !bytes.Contains(content, []byte("SKILL.md")) {
		return nil
	}
	var out []string
	for i, id := range ids {
		if names[i] != "read" {
			continue
		}
		if s := event.ReadSkill("read", toolArgs(content, id)); s != "" {
			if out == nil {
				out = make([]string, len(ids))
			}
			out[i] = s
		}
	}
	return out
}
