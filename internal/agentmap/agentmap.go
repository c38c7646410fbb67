// Package agentmap is the state machine that turns Pi's event stream into
// spans, and the seams that RPC tracing (internal/rpc) and session-file
// translation (internal/session) need of it: opening a root early, the
// open spans' contexts, a session id and a model's endpoint learnt apart
// from the stream, usage and tool failures that only a session file
// records. Package mapper is
// its public face for programs outside this module.
//
// It is a pure state machine: decoded events and their times go in, spans
// come out through the trace.TracerProvider it is given. It knows nothing of
// processes, files or exporters, so run, rpc and replay share it, and tests
// drive it with recorded streams. See docs/span-model.md for the tree, and
// package vocab for every name it writes.
package agentmap

import (
	"context"
	"maps"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// ScopeName is the instrumentation scope of every span the mapper makes:
// the public package's path, the name its users see.
const ScopeName = "github.com/pi-otel/pi-otel/mapper"

// Stats counts what the mapper saw. Anomalies are tolerated, never fatal.
type Stats struct {
	Events  int64
	Unknown int64
	Roots   int64
	// ToolsEvicted counts open tools ended early because more than the
	// cap (WithMaxOpenTools) were open at once.
	ToolsEvicted int64
	Anomalies    map[string]int64
}

// Ending says why a stream stopped without settling.
type Ending struct {
	Reason   vocab.EndReason // vocab.EndSignal, EndExit or EndEOF
	ExitCode int             // set with EndSignal and EndExit
	Signal   string          // e.g. "SIGTERM", with EndSignal
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
	// comps are the open compactions, oldest first: Pi 0.73 can start a
	// second before the first ends, and ends them in order. One started
	// with no run open (RPC `compact`) hangs from idleParent when set.
	comps      []*compaction
	idleParent context.Context
	// dec decodes for Record, made on first use.
	dec *event.Decoder
	// project is pi.project, the last element of the session's cwd.
	project string
	// conv feeds the GenAI attributes that need earlier records.
	conv conventionState
	// ident is the identity the input being handled gives a root it
	// opens (Input.Key, Input.Uncounted).
	ident identity
	// nextLive is the key ReserveRoot chose for the next live root.
	nextLive string
	// nestedBuf is the nested writers' attribute buffer, kept between
	// tool results (see nestedWriter.buf).
	nestedBuf []attribute.KeyValue
	// text is the captured content that outlives a call (content.go).
	text contentState
	// endpoints are the servers RPC responses named, by model (endpoint.go).
	endpoints map[modelKey]endpoint
	// startAttrs and startOpts are start's buffers.
	startAttrs []attribute.KeyValue
	startOpts  [3]trace.SpanStartOption
	// names are the span names made of a tool's or a model's name
	// (spanName).
	names map[nameKey]string
}

// Input is one event for the state machine, with all it needs to know of
// it: the stream path (an event.Event as Pi sent it) and the session path
// (an entry translated into events) both give it this.
type Input struct {
	Event *event.Event
	At    time.Time
	// Nested is what a tool_execution_end's result holds of nested runs,
	// read by the decode stage before the mapper (nested.FromEvent for a
	// stream, the session decoder for a file's toolResult); nil says
	// nothing. The mapper never reads Event.Result for it.
	Nested *nested.Result
	// Key is the identity of the run a root opened by this input starts:
	// its trace and span ids derive from it (package spanid). "" is a
	// live run's: a random key (spanid.NewLiveKey), or ReserveRoot's.
	Key string
	// Uncounted marks a root opened by this input, and every span below
	// it, as traced again after a failed export: exported again, not
	// counted again (vocab.RetracedKey on each span).
	Uncounted bool
}

// identity is what an Input says of the run it may open.
type identity struct {
	key       string
	uncounted bool
}

// New returns a Mapper that writes spans through tp.
func New(tp trace.TracerProvider, opts ...Option) *Mapper {
	cfg := option.Apply(config{parent: context.Background(), maxTools: defaultMaxOpenTools}, opts)
	return &Mapper{
		tracer: tp.Tracer(ScopeName, trace.WithSchemaURL(vocab.SchemaURL)),
		cfg:    cfg,
		stats:  Stats{Anomalies: map[string]int64{}},
	}
}

// Stats returns a copy of the counters.
func (m *Mapper) Stats() Stats {
	s := m.stats
	s.Anomalies = maps.Clone(m.stats.Anomalies)
	return s
}

// SessionID is the id from the session header, once seen.
func (m *Mapper) SessionID() string { return m.session }

// SetSessionID sets gen_ai.conversation.id when the stream has no header
// (RPC mode learns it from get_state).
func (m *Mapper) SetSessionID(id string) {
	m.session = id
	if id == "" {
		return
	}
	conv := semconv.GenAIConversationID(id)
	if r := m.run; r != nil {
		r.root.SetAttributes(conv)
		for _, s := range []*span{r.agentRun, r.turn, r.retry} {
			if s != nil {
				s.SetAttributes(conv)
			}
		}
		if r.chat != nil {
			r.chat.SetAttributes(conv)
		}
		for t := r.tools.oldest; t != nil; t = t.next {
			t.SetAttributes(conv)
		}
	}
	for _, c := range m.comps {
		c.SetAttributes(conv)
	}
}

// Active reports whether a root span is open.
func (m *Mapper) Active() bool { return m.run != nil }

// RootContext returns a context holding the open root span, or the
// configured parent when idle. RPC command spans hang from it.
func (m *Mapper) RootContext() context.Context {
	if m.run != nil {
		return m.run.root.ctx
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

// ReserveRoot returns the span context the next live root will have,
// under parent (the caller's TRACEPARENT, or none), before it opens:
// pi-otel hands it to Pi as TRACEPARENT, so that what Pi's tools start
// lands in the trace about to be written. It holds when the
// TracerProvider's IDGenerator is a spanid.Generator.
func (m *Mapper) ReserveRoot(parent trace.SpanContext) trace.SpanContext {
	m.nextLive = spanid.NewLiveKey()
	tid := parent.TraceID()
	if !parent.IsValid() {
		tid = spanid.TraceID(m.nextLive)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: spanid.SpanID(m.nextLive, spanid.Path{})})
}

// Open opens a root now if none is open, before agent_start arrives. RPC
// uses it for a prompt, whose response precedes agent_start.
func (m *Mapper) Open(at time.Time) context.Context {
	if m.run == nil {
		m.ident = identity{} // a live run's
		m.openRoot(at)
	}
	return m.run.root.ctx
}

func (m *Mapper) anomaly(kind string) { m.stats.Anomalies[kind]++ }

// Handle applies one input. The mapper does not keep its event after the
// call, so callers may reuse it (see event.Decoder).
func (m *Mapper) Handle(in Input) {
	// Escape analysis sees in as a whole: keeping any part of it (the
	// time's location, which the SDK keeps, or the key) would move every
	// caller's event to the heap. So the time is rebuilt from its
	// instant, and the key copied.
	ev, at := in.Event, time.Unix(in.At.Unix(), int64(in.At.Nanosecond()))
	m.stats.Events++
	if in.Key != m.ident.key {
		m.ident.key = strings.Clone(in.Key)
	}
	m.ident.uncounted = in.Uncounted
	switch ev.Type {
	case event.TypeSession:
		m.SetSessionID(ev.ID)
		m.project = Project(ev.Cwd)
	case event.TypeAgentStart:
		m.agentStart(at)
	case event.TypeAgentEnd:
		m.agentEnd(ev, at)
	case event.TypeAgentSettled:
		m.agentSettled(ev, at)
	case event.TypeTurnStart:
		m.turnStart(at)
	case event.TypeTurnEnd:
		m.turnEnd(at)
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
		m.toolEnd(ev, at, in.Nested)
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
		m.rootEvent(vocab.EventQueueUpdate, at,
			vocab.QueueSteeringKey.Int(len(ev.Steering)),
			vocab.QueueFollowUpKey.Int(len(ev.FollowUp)))
	case event.TypeThinkingLevelChanged:
		m.rootEvent(vocab.EventThinkingLevel, at, vocab.ThinkingLevelKey.String(shortName(ev.Level)))
	case event.TypeSessionInfoChanged:
		attrs := []attribute.KeyValue{vocab.SessionNamedKey.Bool(ev.Name != nil)}
		if c := m.cfg.content; c != nil && ev.Name != nil {
			attrs = append(attrs, vocab.SessionNameKey.String(c.Scrub(*ev.Name)))
		}
		m.rootEvent(vocab.EventSessionInfo, at, attrs...)
	case event.TypeEntryAppended:
		m.rootEvent(vocab.EventEntryAppended, at, vocab.EntryTypeKey.String(shortName(ev.EntryType)))
	case event.TypeExtensionError:
		m.ExtensionError(ev, at)
	case event.TypeBashExecutionUpdate, event.TypeExtensionUIRequest, event.TypeResponse:
		// RPC records: the rpc package traces them; nothing to map here.
	default:
		m.stats.Unknown++
		m.currentEvent(vocab.EventUnknown, at, vocab.EventTypeKey.String(shortName(ev.Type)))
	}
	if len(ev.BashCalls) > 0 && m.cfg.bashCalls != nil {
		m.bashCalls(ev.BashCalls)
	}
}

// bashCalls hands calls to WithBashCalls' function, each with its span.
func (m *Mapper) bashCalls(calls []event.BashCall) {
	for _, c := range calls {
		if sc, ok := m.ToolContext(c.ID); ok {
			m.cfg.bashCalls(c, sc)
		}
	}
}

// ReadsBashCalls reports whether the mapper hands out bash calls
// (WithBashCalls): its feeder then decodes them (event.Options.BashCalls).
func (m *Mapper) ReadsBashCalls() bool { return m.cfg.bashCalls != nil }
