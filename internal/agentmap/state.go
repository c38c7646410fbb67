package agentmap

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// span is one open span and the context that holds it.
type span struct {
	trace.Span
	ctx   context.Context
	start time.Time
	path  spanid.Path // its place in the run, whence its id
	// named names the span for its start (spanid.Named.Name): kept with
	// it, which its context holds anyway, so that it costs no allocation.
	named spanid.Named
	// rec is whether the span records, as it said when it started: what is
	// set on it after its start is built only then (a report records one
	// span in ten).
	rec bool
}

// finish ends the span at at, or at its start if at is earlier: replayed
// times come from different clocks (a message's own timestamp, an entry's
// persist time) and must never give a span a negative duration.
func (s *span) finish(at time.Time) {
	if !s.rec {
		s.End() // a span not recorded keeps no end time
		return
	}
	if at.Before(s.start) {
		at = s.start
	}
	s.End(trace.WithTimestamp(at))
}

type chat struct {
	span
	firstChunk bool
	// lastDelta is when the call's latest output chunk arrived (zero
	// before the first); provider and model label the gaps between them.
	lastDelta       time.Time
	provider, model string
}

type compaction struct {
	span
	parentID trace.SpanID // the span it hangs from, to close it with that span
	run      *run         // the run it belongs to; nil when none was open
}

// tool is one open execute_tool span.
type tool struct {
	span
	id         string
	skill      string // the skill the call loads if it succeeds (event.ReadSkill)
	updates    int
	prev, next *tool // neighbours in start order
}

// toolSet holds a run's open tools by call id and in start order, so that
// finding, ending and evicting one costs the same with 40,000 open as with
// one.
type toolSet struct {
	byID           map[string]*tool
	oldest, newest *tool
}

func newToolSet() toolSet { return toolSet{byID: map[string]*tool{}} }

func (s *toolSet) get(id string) *tool { return s.byID[id] }

func (s *toolSet) len() int { return len(s.byID) }

func (s *toolSet) add(t *tool) {
	s.byID[t.id] = t
	t.prev = s.newest
	if s.newest != nil {
		s.newest.next = t
	} else {
		s.oldest = t
	}
	s.newest = t
}

// idRing remembers the last n ids added, in bounded memory.
type idRing struct {
	slots []string
	next  int
	at    map[string]int // id → its slot
}

func (r *idRing) add(id string, n int) {
	if r.at == nil {
		r.at = map[string]int{}
	}
	if len(r.slots) < n {
		r.at[id] = len(r.slots)
		r.slots = append(r.slots, id)
		return
	}
	if old := r.slots[r.next]; r.at[old] == r.next {
		delete(r.at, old)
	}
	r.slots[r.next], r.at[id] = id, r.next
	r.next = (r.next + 1) % n
}

// take reports whether id is remembered, and forgets it.
func (r *idRing) take(id string) bool {
	_, ok := r.at[id]
	delete(r.at, id)
	return ok
}

func (s *toolSet) remove(t *tool) {
	delete(s.byID, t.id)
	if t.prev != nil {
		t.prev.next = t.next
	} else {
		s.oldest = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	} else {
		s.newest = t.prev
	}
	t.prev, t.next = nil, nil
}

type run struct {
	root span

	agentRun  *span
	turn      *span
	chat      *chat
	tools     toolSet
	evicted   idRing // ids of tools the cap ended, for their late records
	openComps int    // open compactions that belong to this run
	retry     *span

	// key is the run's identity, from which its spans' ids derive (see
	// Mapper.start); derived says the TracerProvider's generator derives
	// them (checked at the root), so that ToolContext can tell ids before
	// their spans exist.
	key     string
	derived bool
	// uncounted: the run is traced again after a failed export; its spans
	// say so (pi.retraced) for the span metrics to leave them out.
	uncounted bool
	// live: a stream's run (its key a random one), not a session file's,
	// whose translator times its calls from their messages already.
	live bool
	// toolSeen counts the spans each call id had in this run: a call id
	// given again names another span ("tool/<id>#<n>").
	toolSeen map[string]int
	chats    int

	agentRuns, turns, toolCalls, toolErrors, retries, compactions int
	extensionErrors                                               int
	turnToolCalls                                                 int
	toolsEvicted                                                  int

	usage     event.Usage
	provider  string
	model     string
	lastStop  string
	lastError string
	aborted   bool
	lastEnd   time.Time
	willRetry bool          // the last compaction_end or agent_end said a retry follows
	nested    *nestedTotals // nil until a tool result carries nested work
	skills    runSkills
	// genai holds the run's GenAI facts beyond the counts (genai.go).
	genai runGenAI
	// content is the run's captured input and output (content.go).
	content runContent
}

func (r *run) expectingContinuation() bool {
	// An open retry or compaction span is itself the pending continuation.
	return r.retry != nil || r.openComps > 0 || r.willRetry
}

// innermost is the span new events and children attach to.
func (r *run) innermost() *span {
	if r.chat != nil {
		return &r.chat.span
	}
	return r.container()
}

// container is where a new child span hangs: a turn, else a run, else root.
func (r *run) container() *span {
	switch {
	case r.turn != nil:
		return r.turn
	case r.agentRun != nil:
		return r.agentRun
	}
	return &r.root
}

// Span kinds as start options, made once: trace.WithSpanKind allocates.
var (
	kindInternal = trace.WithSpanKind(trace.SpanKindInternal)
	kindClient   = trace.WithSpanKind(trace.SpanKindClient)
)

func spanKind(kind trace.SpanKind) trace.SpanStartOption {
	switch kind {
	case trace.SpanKindInternal:
		return kindInternal
	case trace.SpanKindClient:
		return kindClient
	}
	return trace.WithSpanKind(kind)
}

// start starts s, a new span, below parent. path names its place in the
// open run (see spanid): its id derives from the run's key and path. The
// span starts with attrs, which samplers see; start keeps no reference to
// them. s must be new: its context holds it.
func (m *Mapper) start(s *span, parent context.Context, path spanid.Path, name string, kind trace.SpanKind, at time.Time, attrs ...attribute.KeyValue) {
	r := m.run
	if r != nil {
		parent = s.named.Name(parent, r.key, path)
	}
	// Any tracer reads start options through trace.NewSpanStartConfig,
	// which copies the attributes: one slice, and one slice of options,
	// serve every span.
	buf := append(m.startAttrs[:0], attrs...)
	if r != nil && r.uncounted || r == nil && m.ident.uncounted {
		buf = append(buf, vocab.RetracedKey.Bool(true))
	}
	if m.session != "" {
		// On every span, not only the root: backends group spans by it.
		buf = append(buf, semconv.GenAIConversationID(m.session))
	}
	if m.project != "" {
		// On every span too: cost per project is summed over chat spans.
		buf = append(buf, vocab.ProjectKey.String(m.project))
	}
	m.startOpts[0], m.startOpts[1], m.startOpts[2] = spanKind(kind), trace.WithTimestamp(at), trace.WithAttributes(buf...)
	ctx, started := m.tracer.Start(parent, name, m.startOpts[:]...)
	clear(m.startOpts[:])
	clear(buf) // holds no strings past the span's start
	m.startAttrs = buf[:0]
	s.Span, s.ctx, s.start, s.path, s.rec = started, ctx, at, path, started.IsRecording()
}

// ToolPath is the path of the execute_tool span of call id that has had n
// spans before it in its run.
func ToolPath(id string, n int) spanid.Path { return spanid.Path{Kind: "tool", ID: id, N: n} }

// ToolContext is the span context of the execute_tool span of call callID
// in the open run: the open span's, or the one its span will have once it
// starts, known from the keys as soon as the assistant message that names
// the call is seen (the next span of that call id, after any that ended).
// It reports false with no run open, or when the TracerProvider does not
// derive ids from keys (its IDGenerator is not a spanid.Generator).
func (m *Mapper) ToolContext(callID string) (trace.SpanContext, bool) {
	r := m.run
	if r == nil || callID == "" || !r.derived {
		return trace.SpanContext{}, false
	}
	if t := r.tools.get(callID); t != nil {
		return t.SpanContext(), true
	}
	root := r.root.SpanContext()
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: root.TraceID(), SpanID: spanid.SpanID(r.key, ToolPath(callID, r.toolSeen[callID])),
		TraceFlags: root.TraceFlags(), TraceState: root.TraceState(),
	}), true
}
