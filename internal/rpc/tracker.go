// Package rpc traces a Pi RPC session from both directions of the pipe.
//
// A [Tracker] is fed every record the controller writes to Pi and every
// record Pi writes back, in the order the proxy saw them. Session events go
// to the shared [agentmap.Mapper] (what the tracker needs of it is [Mapper]),
// so runs look exactly as they do in json mode; the tracker adds what only
// RPC has: a span per command (command to response), a span per extension
// dialog (request to answer), events for fire-and-forget UI calls and
// queued messages, and the prompt that opens a run. It never changes or
// drops a record: the proxy forwards bytes, the tracker only watches. See
// docs/rpc.md.
//
// A prompt's response says whether a run starts, so the records between a
// prompt and its response are held for tracing until it arrives (never for
// forwarding), then traced in their order and times. A command is matched
// to its response by the id and type Pi echoes, first in first out.
package rpc

import (
	"container/list"
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// ScopeName is the instrumentation scope of the spans the tracker makes.
// Users see it in every backend, so it names what the spans are, not the
// package that makes them (docs/span-model.md lists the scopes).
const ScopeName = "github.com/pi-otel/pi-otel/rpc"

// Stats counts what the tracker saw.
type Stats struct {
	ControllerRecords  int64 // lines from the controller
	PiRecords          int64 // records from Pi that are JSON objects with a type
	PiMalformed        int64 // other lines from Pi
	Commands           int64 // commands traced
	Responses          int64 // responses matched to their command
	UnmatchedResponses int64 // responses with no command waiting
	Evicted            int64 // commands ended unanswered: too many pending
	Runs               int64 // roots opened for prompts
	Dialogs            int64 // extension dialogs traced
	DialogsEvicted     int64 // dialogs ended unanswered: too many open
	TimedOut           int64 // dialogs Pi resolved itself after their timeout
	UnmatchedUI        int64 // extension_ui_response for no open dialog
	UIEvents           int64 // fire-and-forget extension UI calls
	ExtensionErrors    int64
	LookaheadForced    int64 // prompts placed without seeing their response

	Pending     int // commands awaiting a response now
	OpenDialogs int // dialogs open now
	Held        int // records waiting for a prompt's response now
}

// Mapper is what the tracker needs of the session mapper: a
// *agentmap.Mapper, which maps Pi's session events, and whose open run the
// RPC spans hang from.
type Mapper interface {
	Handle(in agentmap.Input)
	// ReadsBashCalls asks for the bash calls of the events it handles.
	ReadsBashCalls() bool
	ExtensionError(ev *event.Event, at time.Time)
	Close(end agentmap.Ending, at time.Time)

	// Open opens a root now, for a prompt Pi has started.
	Open(at time.Time) context.Context
	Active() bool
	RootContext() context.Context
	CurrentContext() context.Context
	LastRoot() trace.SpanContext
	ParentNextIdleCompaction(ctx context.Context)

	SessionID() string
	SetSessionID(id string)
	LearnEndpoint(provider, model, baseURL string)
}

var _ Mapper = (*agentmap.Mapper)(nil)

// Tracker is safe for concurrent use: the proxy feeds it from its two copy
// loops. The mapper it is given must not be used by anyone else meanwhile.
type Tracker struct {
	mu     sync.Mutex
	m      Mapper
	tracer trace.Tracer
	cfg    config
	decode event.Options
	last   time.Time

	// queue holds records whose tracing waits for the prompt at its head
	// to be answered (see lookahead).
	queue  []item
	qbytes int
	dirty  bool // the head's response may be in the queue: search again

	pending pendingTable
	dialogs dialogTable
	// closed is set by Close; later records (the controller still
	// writing after Pi exited) are counted, not traced.
	closed bool

	stats Stats
}

// item is one record, held or being handled.
type item struct {
	fromPi bool
	rec    []byte
	at     time.Time

	typ     string        // Pi: record type, "" when malformed
	resp    *wireResponse // Pi: a decoded response
	claimed bool          // Pi: a response a prompt's lookahead already took

	cmd *command // controller: nil for an extension_ui_response
}

// New returns a Tracker that maps session events with m and writes its own
// spans through tp.
func New(m Mapper, tp trace.TracerProvider, opts ...Option) *Tracker {
	cfg := option.Apply(config{
		maxPending:  1024,
		maxDialogs:  256,
		holdRecords: 4096,
		holdBytes:   16 << 20,
		holdFor:     30 * time.Second,
	}, opts)
	return &Tracker{
		m:       m,
		tracer:  tp.Tracer(ScopeName, trace.WithSchemaURL(vocab.SchemaURL)),
		cfg:     cfg,
		decode:  event.Options{Content: cfg.content != nil, BashCalls: m.ReadsBashCalls()},
		pending: pendingTable{byKey: map[key][]*command{}, order: list.New()},
		dialogs: dialogTable{byID: map[string]*dialog{}, order: list.New()},
	}
}

// FromController handles one line the controller sent to Pi, without its
// LF (and CR). Call it before the line is written to Pi, so that Pi's
// answer can never be traced before the question. rec is not retained.
func (t *Tracker) FromController(rec []byte, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at = t.clock(at)
	t.stats.ControllerRecords++
	if t.closed {
		return
	}
	c, _ := decodeCommand(rec, at)
	it := item{rec: rec, at: at, cmd: c}
	if len(t.queue) == 0 && (c == nil || c.name != "prompt") {
		t.handle(it)
		return
	}
	t.hold(it)
}

// FromPi handles one record Pi wrote, without its LF. Call it before the
// record is written to the controller. rec is not retained.
func (t *Tracker) FromPi(rec []byte, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at = t.clock(at)
	if t.closed {
		return
	}
	it := item{fromPi: true, rec: rec, at: at}
	typ, err := event.Peek(rec)
	if err != nil {
		t.stats.PiMalformed++
		return
	}
	t.stats.PiRecords++
	it.typ = typ
	if typ == event.TypeResponse {
		var r wireResponse
		_ = json.Unmarshal(rec, &r)
		it.resp = &r
		if id, ok := r.bashID(); ok && t.cfg.bashAnswered != nil {
			t.cfg.bashAnswered(id)
		}
	}
	if len(t.queue) == 0 {
		t.handle(it)
		return
	}
	t.hold(it)
}

// Close ends the session: records still held are traced, every open
// dialog and unanswered command is ended with end's reason, and the mapper
// closes its open run.
func (t *Tracker) Close(end agentmap.Ending, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.closed = true
	at = t.clock(at)
	t.pump(true)
	t.expire(at)
	for _, d := range t.dialogs.all() {
		t.dialogs.remove(d)
		d.span.SetAttributes(
			vocab.UIUnanswered.Attr(),
			vocab.UnfinishedKey.Bool(true),
			vocab.EndReason(end.Reason).Attr())
		d.span.End(trace.WithTimestamp(at))
	}
	for _, c := range t.pending.all() {
		t.pending.remove(c)
		t.unanswered(c, vocab.EndReason(end.Reason), at)
	}
	t.m.Close(end, at)
}

// Stats returns the counters.
func (t *Tracker) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stats
	s.Pending = t.pending.len()
	s.OpenDialogs = t.dialogs.len()
	s.Held = len(t.queue)
	return s
}

// clock keeps times monotonic: the two copy loops stamp records before
// they take the lock, so a later record may carry an earlier time.
func (t *Tracker) clock(at time.Time) time.Time {
	if at.Before(t.last) {
		return t.last
	}
	t.last = at
	return at
}

func (t *Tracker) handle(it item) {
	t.expire(it.at)
	if it.fromPi {
		t.fromPi(it)
		return
	}
	if it.cmd == nil {
		t.uiResponse(it.rec, it.at)
		return
	}
	t.command(it.cmd)
}

func (t *Tracker) fromPi(it item) {
	switch it.typ {
	case event.TypeResponse:
		t.response(it.resp, it.at)
		return
	case event.TypeBashExecutionUpdate:
		t.bashUpdate(it.rec)
		return
	case event.TypeExtensionUIRequest:
		t.uiRequest(it.rec, it.at)
		return
	case event.TypeExtensionError:
		t.extensionError(it.rec, it.at)
		return
	case event.TypeCompactionStart:
		t.parentIdleCompaction()
	case event.TypeAgentStart:
		if c := t.pending.deferredPrompt(); c != nil && !t.m.Active() {
			t.openDeferred(c)
		}
	}
	ev, err := event.Decode(it.rec, t.decode)
	if err != nil && ev.Type == "" {
		return
	}
	t.m.Handle(agentmap.Input{Event: &ev, At: it.at, Nested: nested.FromEvent(&ev)})
}
