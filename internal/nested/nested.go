// Package nested reads the agent runs a tool result carries: Pi's subagent
// extension (and the tools built on it) hands each child's messages back to
// the parent in the result's details, so a child's model calls, tools,
// tokens and failures can be traced below the tool that ran it.
//
// A nested run is any entry of an array in `details` (`results` in the
// example extension) that carries a `messages` array of Pi messages. It is
// named by `agent`, else `type`, else [GenericAgent]. A child's own tool
// results can carry nested runs again, to any depth.
//
// Pi 1.6's generic fields come with it: the result's `usage` (model work the
// tool did, counted into the session's totals) and `nestedCalls` (the calls
// the tool made to other tools).
//
// Everything is bounded by [Limits]; what a limit cut is counted in
// [Dropped], never silently lost. The package knows nothing of spans.
package nested

import (
	"bytes"
	"cmp"
	"encoding/json"
	"sort"
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
)

// GenericAgent names a nested run whose entry names no agent.
const GenericAgent = "subagent"

// Limits bound what one tool result expands into.
type Limits struct {
	// MaxRuns bounds the nested runs of one tool result, all depths
	// together.
	MaxRuns int
	// MaxDepth bounds how deep runs nest below the tool (1: only the
	// tool's own children).
	MaxDepth int
	// MaxItems bounds the chat and tool items of one run.
	MaxItems int
	// MaxCalls bounds the nestedCalls read from one result.
	MaxCalls int
	// MaxBytes bounds the size of a result that is read at all.
	MaxBytes int
}

// DefaultLimits are far above what the example extension makes (at most
// 8 parallel tasks, one level), and keep a hostile result to a few
// thousand spans.
var DefaultLimits = Limits{MaxRuns: 256, MaxDepth: 8, MaxItems: 1024, MaxCalls: 256, MaxBytes: 64 << 20}

// Dropped counts what the limits and bad input cut.
type Dropped struct {
	Runs         int // runs past MaxRuns
	Deep         int // runs past MaxDepth
	Items        int // chat and tool items past MaxItems
	Calls        int // nestedCalls past MaxCalls
	Oversize     int // results over MaxBytes, not read
	Malformed    int // values of the wrong shape (a field, a message, a run)
	NoMessages   int // results[] entries without a messages array
	UnknownRoles int // child messages of a role that is neither assistant, toolResult nor user
	Unordered    int // child messages timed before the one before them
	// Cycles are child session files named while they were being read
	// (a file naming itself, or a file it names naming it back): not
	// followed, and the result's copy of the messages, if any, used.
	Cycles int
	// UnreadFiles are child session files named but not read (the
	// result's copy of the messages, if any, was used): not a loss.
	UnreadFiles int
	// Repeated are tool results a child's messages hold twice (one
	// toolCallId, no model call asking for it again between; see
	// event.Results): traced once, not a loss.
	Repeated int
}

// Total is the sum of the counts.
func (d Dropped) Total() int {
	return d.Runs + d.Deep + d.Items + d.Calls + d.Oversize + d.Malformed + d.NoMessages + d.UnknownRoles + d.Unordered + d.Cycles
}

// Result is what one tool result carries.
type Result struct {
	Mode string // details.mode: single, parallel, chain; "" when absent
	// Usage is the result's own usage field: model work the tool reports
	// for itself, covering its nested runs.
	Usage *event.Usage
	// Calls are the nestedCalls records; CallsComplete is false when Pi
	// says it dropped some.
	Calls         []Call
	CallsComplete bool
	Runs          []*Run
	// Dropped counts what was cut, in this result and every run below it.
	Dropped Dropped
}

// Empty reports whether there is nothing to trace.
func (r *Result) Empty() bool {
	return r == nil || r.Usage == nil && len(r.Calls) == 0 && len(r.Runs) == 0 && r.Dropped.Total() == 0
}

// Call is one nestedCalls record.
type Call struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Status     string   `json:"status"` // ok, error, unfinished
	DurationMs *float64 `json:"durationMs"`
	Error      string   `json:"error"`
}

// Run is one nested agent run.
type Run struct {
	Agent        string
	Task         string // content: the caller decides whether to show it
	Index        int    // position in its results array
	ExitCode     *int
	StopReason   string
	ErrorMessage string
	Model        string
	Provider     string
	// Usage is the run's own model work: its assistant messages, or the
	// entry's usage when they carry none.
	Usage event.Usage
	// Start and End span the run's messages; zero when none is timed.
	Start, End time.Time
	Items      []Item
	// Depth is 1 for the tool's own children.
	Depth int
	// Session is the id of the child's session file when its messages
	// were read from it (see SessionReader); "" when they are the
	// result's copy.
	Session string
	// FromSummary is set when the entry holds no messages, nor names a
	// file that could be read: Usage is the entry's summed usage, and
	// the run has no items.
	FromSummary bool
}

// Failed reports whether the child failed: a non-zero exit, a stop reason
// of error or aborted, or an error message.
func (r *Run) Failed() bool {
	return r.ExitCode != nil && *r.ExitCode != 0 || r.StopReason == "error" || r.StopReason == "aborted" || r.ErrorMessage != ""
}

// ItemKind tells a chat item from a tool item.
type ItemKind int

// Item kinds.
const (
	Chat ItemKind = iota
	Tool
)

// Item is one model call or one tool call of a nested run.
type Item struct {
	Kind       ItemKind
	Start, End time.Time // a chat starts at its timestamp; a tool ends at its result's
	DurationMs *float64

	// chat
	Model, Provider, ResponseModel string
	StopReason, ErrorMessage       string
	Usage                          *event.Usage
	ToolCalls                      int

	// tool
	ToolName, ToolCallID string
	IsError              bool
	// Nested is what the child's tool result carries in turn; nil when
	// nothing.
	Nested *Result
}

// Probe reports whether result (a tool_execution_end result, or a session
// file's toolResult message) may carry nested work, without decoding it:
// whether any key in it is `messages`, `usage`, `nestedCalls` or
// `sessionFile`. It looks
// at keys only, found as a quote followed by a colon: inside a string a
// quote is escaped, so a plain tool's output, however large, costs one
// pass of bytes.Index over it. It expects compact JSON, as Pi writes it; a
// false positive only costs a Parse that finds nothing.
func Probe(result []byte) bool {
	b := result
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], keyEnd)
		if j < 0 {
			return false
		}
		q := i + j
		i = q + len(keyEnd)
		if event.Escaped(b, q) {
			continue // a quote inside a string: tool output
		}
		// The key opens at the unescaped quote before it; a key of ours is
		// short, and a longer one can only be another.
		for k := q - 1; k >= 0 && k >= q-maxKey; k-- {
			if b[k] == '"' && !event.Escaped(b, k) {
				if relevantKey(b[k+1 : q]) {
					return true
				}
				break
			}
		}
	}
	return false
}

// maxKey bounds how far back Probe looks for a key's opening quote: the
// keys it looks for, even spelt with escapes, are shorter.
const maxKey = 96

var (
	keyEnd         = []byte(`":`)
	keyMessages    = []byte(`"messages"`)
	keyMessagesRaw = []byte("messages")
	keyUsage       = []byte("usage")
	keyNestedCalls = []byte("nestedCalls")
	keySessionFile = []byte(`"sessionFile"`)
	keySessionRaw  = []byte("sessionFile")
)

// relevantKey reports whether key may name a field Parse reads: matched
// as encoding/json matches keys (ignoring case), and any key with an
// escape, which may spell one.
func relevantKey(key []byte) bool {
	return bytes.EqualFold(key, keyMessagesRaw) || bytes.EqualFold(key, keyUsage) ||
		bytes.EqualFold(key, keyNestedCalls) || bytes.EqualFold(key, keySessionRaw) || bytes.IndexByte(key, '\\') >= 0
}

// FromEvent reads what a tool_execution_end of a stream carries, for the
// mapper's Input: nil for other records, and for results that cannot
// carry nested work (Probe). Child session files are not read: a stream
// has none of its own to resolve their names against.
func FromEvent(ev *event.Event) *Result {
	if ev.Type != event.TypeToolExecutionEnd || len(ev.Result) == 0 || !Probe(ev.Result) {
		return nil
	}
	return Parse(ev.Result, DefaultLimits)
}

// Parse reads what result carries. It returns nil when result is not an
// object with any of the fields; bad values are counted, never fatal.
func Parse(result []byte, lim Limits) *Result {
	return ParseWith(result, lim, nil, Origin{})
}

// ParseWith is Parse that reads the child session files results[] entries
// name (`sessionFile`) with sessions, when it is not nil: see SessionReader.
// from is where result was read, which relative names resolve against.
func ParseWith(result []byte, lim Limits, sessions SessionReader, from Origin) *Result {
	lim = lim.withDefaults()
	if len(result) > lim.MaxBytes {
		return &Result{Dropped: Dropped{Oversize: 1}}
	}
	p := parser{lim: lim, dec: walker{}, sessions: sessions, from: from}
	r := p.result(result, 0)
	if r != nil {
		r.Dropped = p.dropped
	} else if p.dropped.Total() > 0 {
		r = &Result{Dropped: p.dropped}
	}
	return r
}

func (l Limits) withDefaults() Limits {
	// A bound below 1 takes the default.
	d := DefaultLimits
	d.MaxRuns = cmp.Or(max(l.MaxRuns, 0), d.MaxRuns)
	d.MaxDepth = cmp.Or(max(l.MaxDepth, 0), d.MaxDepth)
	d.MaxItems = cmp.Or(max(l.MaxItems, 0), d.MaxItems)
	d.MaxCalls = cmp.Or(max(l.MaxCalls, 0), d.MaxCalls)
	d.MaxBytes = cmp.Or(max(l.MaxBytes, 0), d.MaxBytes)
	return d
}

type parser struct {
	lim      Limits
	dec      decoder
	sessions SessionReader
	runs     int // runs kept so far, all depths
	dropped  Dropped
	// files are the session files being read, for cycles and relative
	// names (sessionfile.go); from's file at the bottom, once rooted.
	files  []openFile
	from   Origin
	rooted bool
}

// decoder reads the values the parser walks through. walker (walk.go) is
// the one in use; reference_test.go holds it to encoding/json.
type decoder interface {
	// toolResult reads the fields of a tool result; false when raw is
	// not an object.
	toolResult(raw []byte) (toolResult, bool)
	// object reads an object's members by their exact names.
	object(raw []byte) (map[string]json.RawMessage, bool)
	array(raw []byte) ([]json.RawMessage, bool)
	// entry reads a results[] entry, failing (with what it could read)
	// as json.Unmarshal fails on a field of the wrong type.
	entry(raw []byte, e *entry) error
	// message reads a child's message: malformed when a field was lost,
	// skip when it is not a message at all.
	message(raw []byte, m *message) (malformed, skip bool)
	role(raw []byte) string
}

// toolResult is the part of a tool result (or toolResult message) read.
type toolResult struct {
	Details     json.RawMessage `json:"details"`
	Usage       json.RawMessage `json:"usage"`
	NestedCalls json.RawMessage `json:"nestedCalls"`
}

// result reads one tool result at depth (0 for the tool the mapper traces).
func (p *parser) result(raw []byte, depth int) *Result {
	tr, ok := p.dec.toolResult(raw)
	if !ok {
		return nil // not an object: a tool's plain value, nothing nested
	}
	var r Result
	if len(tr.Usage) > 0 && !isNull(tr.Usage) {
		var u event.Usage
		if json.Unmarshal(tr.Usage, &u) == nil {
			r.Usage = &u
		} else {
			p.dropped.Malformed++
		}
	}
	if len(tr.NestedCalls) > 0 && !isNull(tr.NestedCalls) {
		p.calls(&r, tr.NestedCalls)
	}
	if len(tr.Details) > 0 && (bytes.Contains(tr.Details, keyMessages) || p.sessions != nil && bytes.Contains(tr.Details, keySessionFile)) {
		p.details(&r, tr.Details, depth)
	}
	if r.Usage == nil && len(r.Calls) == 0 && len(r.Runs) == 0 && r.Mode == "" {
		return nil
	}
	return &r
}

func (p *parser) calls(r *Result, raw json.RawMessage) {
	var nc struct {
		Calls    []json.RawMessage `json:"calls"`
		Complete *bool             `json:"complete"`
	}
	if json.Unmarshal(raw, &nc) != nil {
		p.dropped.Malformed++
		return
	}
	r.CallsComplete = nc.Complete == nil || *nc.Complete
	for _, c := range nc.Calls {
		if len(r.Calls) >= p.lim.MaxCalls {
			p.dropped.Calls += len(nc.Calls) - len(r.Calls)
			break
		}
		var call Call
		if json.Unmarshal(c, &call) != nil {
			p.dropped.Malformed++
			continue
		}
		r.Calls = append(r.Calls, call)
	}
}

// details finds the run arrays: `results` first, then any other array of
// objects whose entries carry messages, in key order.
func (p *parser) details(r *Result, raw json.RawMessage, depth int) {
	d, ok := p.dec.object(raw)
	if !ok {
		return // details of another shape: nothing nested
	}
	if m, ok := d["mode"]; ok {
		_ = event.ReadString(m, &r.Mode)
	}
	// A tool that ran one child may name its session file in details
	// itself, beside or instead of a results entry.
	var file string
	if v, ok := d["sessionFile"]; ok && p.sessions != nil {
		_ = event.ReadString(v, &file)
	}
	keys := make([]string, 0, len(d))
	for k, v := range d {
		if k != "results" && len(v) > 0 && v[0] == '[' && (bytes.Contains(v, keyMessages) || p.sessions != nil && bytes.Contains(v, keySessionFile)) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if _, ok := d["results"]; ok {
		keys = append([]string{"results"}, keys...)
	}
	for _, k := range keys {
		p.entries(r, d[k], depth, k == "results", file)
	}
	if file != "" && len(r.Runs) == 0 && depth+1 <= p.lim.MaxDepth && p.runs < p.lim.MaxRuns {
		e := entry{SessionFile: file}
		if child, _ := p.child(&e); child != "" {
			p.runs++
			run := p.run(&e, depth+1)
			p.leave()
			run.Session = child
			r.Runs = append(r.Runs, run)
		}
	}
}

// entry is one results[] entry. Its usage is the example extension's
// (cost as one number).
type entry struct {
	Agent        string            `json:"agent"`
	Type         string            `json:"type"`
	Task         string            `json:"task"`
	ExitCode     *int              `json:"exitCode"`
	StopReason   string            `json:"stopReason"`
	ErrorMessage string            `json:"errorMessage"`
	Model        string            `json:"model"`
	Usage        *entryUsage       `json:"usage"`
	Messages     []json.RawMessage `json:"messages"`
	SessionFile  string            `json:"sessionFile"`
}

type entryUsage struct {
	Input      int64   `json:"input"`
	Output     int64   `json:"output"`
	CacheRead  int64   `json:"cacheRead"`
	CacheWrite int64   `json:"cacheWrite"`
	Cost       float64 `json:"cost"`
}

// entries reads the runs of one array; file is the details' sessionFile,
// the file of a lone entry that names none.
func (p *parser) entries(r *Result, raw json.RawMessage, depth int, counted bool, file string) {
	list, ok := p.dec.array(raw)
	if !ok {
		if counted {
			p.dropped.Malformed++
		}
		return
	}
	for i, raw := range list {
		if p.runs >= p.lim.MaxRuns {
			// Past the bound nothing is decoded: a count, not a parse.
			p.dropped.Runs += len(list) - i
			return
		}
		var e entry
		err := p.dec.entry(raw, &e)
		if e.SessionFile == "" && len(list) == 1 {
			e.SessionFile = file
		}
		// Past the depth bound no file is read: the run is cut anyway, and
		// the files being read stay as many as the levels.
		deep := depth+1 > p.lim.MaxDepth
		child, cycle := "", false
		if !deep {
			child, cycle = p.child(&e)
		}
		summary := false
		switch named := e.SessionFile != "" && p.sessions != nil; {
		case e.Messages == nil && cycle:
			continue // counted once, as a cycle
		case e.Messages == nil && e.Usage != nil && !deep:
			// No messages, here or in a file (the child's session file
			// is gone): the entry's summed usage is what the child
			// spent, a run without items.
			summary = true
		case e.Messages == nil && !(deep && named): // absent, or not an array
			if counted {
				p.dropped.NoMessages++
			}
			continue
		}
		if err != nil {
			// A field of the wrong type: encoding/json kept the rest.
			p.dropped.Malformed++
		}
		if deep {
			p.dropped.Deep++
			continue
		}
		p.runs++
		run := p.run(&e, depth+1)
		if child != "" {
			p.leave()
		}
		run.Index = i
		run.Session = child
		run.FromSummary = summary
		r.Runs = append(r.Runs, run)
	}
}

func (p *parser) run(e *entry, depth int) *Run {
	run := &Run{
		Agent: cmp.Or(e.Agent, e.Type, GenericAgent), Task: e.Task, ExitCode: e.ExitCode, StopReason: e.StopReason,
		ErrorMessage: e.ErrorMessage, Model: e.Model, Depth: depth,
	}
	if n := min(len(e.Messages), p.lim.MaxItems); n > 0 {
		run.Items = make([]Item, 0, n) // at most one item per message
	}
	p.messages(run, e.Messages, depth)
	if run.Usage == (event.Usage{}) && e.Usage != nil {
		u := e.Usage
		run.Usage = event.Usage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
			TotalTokens: u.Input + u.Output + u.CacheRead + u.CacheWrite, Cost: event.Cost{Total: u.Cost}}
	}
	return run
}

// Total is the model work below the tool without double counting: the
// result's own usage when it reports one (it covers its nested work), else
// the sum of its runs and, recursively, of what their tools carry.
func (r *Result) Total() event.Usage {
	var u event.Usage
	if r == nil {
		return u
	}
	if r.Usage != nil {
		return *r.Usage
	}
	for _, run := range r.Runs {
		t := run.Total()
		u.Add(&t)
	}
	return u
}

// Total is the run's own usage plus what its tools carry.
func (r *Run) Total() event.Usage {
	u := r.Usage
	for i := range r.Items {
		if n := r.Items[i].Nested; n != nil {
			t := n.Total()
			u.Add(&t)
		}
	}
	return u
}

func isNull(b []byte) bool { return string(bytes.TrimSpace(b)) == "null" }

func msTime(v float64) time.Time {
	if v <= 0 || v > 1e15 { // beyond year 33000: not a time
		return time.Time{}
	}
	return time.UnixMilli(int64(v))
}

// Millis is a durationMs as a duration, bounded at ~30 years.
func Millis(v float64) time.Duration {
	return time.Duration(min(v, 1e12) * float64(time.Millisecond))
}
