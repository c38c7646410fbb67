// Package rpc traces a Pi RPC session from both directions of the pipe.
//
// A [Tracker] is fed every record the controller writes to Pi and every
// record Pi writes back, in the order the proxy saw them. Session events go
// to the shared [mapper.Mapper] (through [Mapper]), so runs look exactly as they do in json
// mode; the tracker adds what only RPC has: a span per command (command to
// response), a span per extension dialog (request to answer), events for
// fire-and-forget UI calls and queued messages, and the prompt that opens a
// run. It never changes or drops a record: the proxy forwards bytes, the
// tracker only watches. See docs/rpc.md.
package rpc

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/mapper"
	"github.com/pi-otel/pi-otel/mapper/piconv"
)

// ScopeName is the instrumentation scope of the spans the tracker makes.
const ScopeName = "github.com/pi-otel/pi-otel/internal/rpc"

// Scrubber redacts and bounds one captured value. Giving one (content
// capture) records error texts in full, redacted, instead of masked.
type Scrubber interface {
	Scrub(s string) string
}

type config struct {
	content     Scrubber
	maxPending  int
	maxDialogs  int
	holdRecords int
	holdBytes   int
	holdFor     time.Duration
}

// Option configures a Tracker.
type Option func(*config)

// WithContent turns on opt-in content capture: Pi's error texts and
// extension error messages are recorded through s.
func WithContent(s Scrubber) Option { return func(c *config) { c.content = s } }

// WithMaxPending bounds the commands awaiting a response (default 1024).
// Past it the oldest is ended unanswered and counted in Stats.Evicted.
func WithMaxPending(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxPending = n
		}
	}
}

// WithMaxDialogs bounds the open extension dialogs (default 256).
func WithMaxDialogs(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxDialogs = n
		}
	}
}

// WithLookahead bounds how long tracing may wait for a prompt's response
// before deciding where the prompt's span goes (default 4096 records,
// 16 MiB, or 30 s of stream time, whichever comes first). Forwarding never
// waits; only span creation does.
func WithLookahead(records, bytes int, d time.Duration) Option {
	return func(c *config) {
		if records > 0 {
			c.holdRecords = records
		}
		if bytes > 0 {
			c.holdBytes = bytes
		}
		if d > 0 {
			c.holdFor = d
		}
	}
}

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
// *mapper.Mapper, which maps Pi's session events, and whose open run the
// RPC spans hang from.
type Mapper interface {
	Handle(ev *event.Event, at time.Time)
	ExtensionError(ev *event.Event, at time.Time)
	Close(end mapper.Ending, at time.Time)

	// Open opens a root now, for a prompt Pi has started.
	Open(at time.Time) context.Context
	Active() bool
	RootContext() context.Context
	CurrentContext() context.Context
	LastRoot() trace.SpanContext
	ParentNextIdleCompaction(ctx context.Context)

	SessionID() string
	SetSessionID(id string)
}

var _ Mapper = (*mapper.Mapper)(nil)

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
	cfg := config{
		maxPending:  1024,
		maxDialogs:  256,
		holdRecords: 4096,
		holdBytes:   16 << 20,
		holdFor:     30 * time.Second,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return &Tracker{
		m:       m,
		tracer:  tp.Tracer(ScopeName),
		cfg:     cfg,
		decode:  event.Options{Content: cfg.content != nil},
		pending: newPendingTable(),
		dialogs: newDialogTable(),
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
func (t *Tracker) Close(end mapper.Ending, at time.Time) {
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
			piconv.UIUnanswered.Attr(),
			piconv.UnfinishedKey.Bool(true),
			end.Reason.Attr())
		d.span.End(trace.WithTimestamp(at))
	}
	for _, c := range t.pending.all() {
		t.pending.remove(c)
		t.unanswered(c, end.Reason, at)
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

// A prompt's response arrives before agent_start and says whether a run
// starts (disposition "started"), the prompt was queued, handled by an
// extension, or rejected. Where the prompt's span goes, and whether it
// opens a root, depends on that answer, while what happens between the
// prompt and its response (an input handler's dialog, a compaction before
// the run) belongs inside that root. So tracing holds records from a
// prompt until its response arrives, then traces them in their original
// order and times, knowing the answer. Forwarding is never held.

// hold queues it (copying its bytes) and traces what can be traced.
func (t *Tracker) hold(it item) {
	it.rec = append([]byte(nil), it.rec...)
	t.queue = append(t.queue, it)
	t.qbytes += len(it.rec)
	if len(t.queue) == 1 || it.resp != nil {
		t.dirty = true
	}
	t.pump(false)
}

// pump traces held records until it reaches a prompt whose response has
// not arrived; force decides such prompts without it.
func (t *Tracker) pump(force bool) {
	for len(t.queue) > 0 {
		head := &t.queue[0]
		if c := head.cmd; c != nil && c.name == "prompt" && !head.fromPi && !c.decision.known {
			if !t.dirty || !t.lookahead(c) {
				t.dirty = false
				if !force && !t.overLimit(head) {
					return
				}
				t.forceDecision(c)
			}
		}
		it := *head
		t.queue[0] = item{}
		t.queue = t.queue[1:]
		t.qbytes -= len(it.rec)
		t.dirty = true
		t.handle(it)
	}
	t.queue = t.queue[:0]
	t.dirty = false
}

// lookahead searches the held records for the response to the prompt c at
// the head of the queue. Responses with the same id and command go to
// commands in the order they were sent, so the ones owed to earlier
// commands still waiting are skipped.
func (t *Tracker) lookahead(c *command) bool {
	skip := 0
	for _, p := range t.pending.byKey[c.key] {
		if !p.claimed {
			skip++
		}
	}
	for i := 1; i < len(t.queue); i++ {
		it := &t.queue[i]
		if it.resp == nil || it.claimed || it.resp.key() != c.key {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		it.claimed = true
		c.claimed = true
		c.decision = decision{known: true, success: it.resp.Success, disposition: it.resp.data().Disposition}
		return true
	}
	return false
}

func (t *Tracker) overLimit(head *item) bool {
	return len(t.queue) > t.cfg.holdRecords || t.qbytes > t.cfg.holdBytes ||
		t.last.Sub(head.at) > t.cfg.holdFor
}

// forceDecision places a prompt whose response is not in sight: it started
// a run if Pi has begun one since, otherwise it is traced where it stands.
func (t *Tracker) forceDecision(c *command) {
	t.stats.LookaheadForced++
	c.decision = decision{known: true, forced: true}
	for i := 1; i < len(t.queue); i++ {
		if t.queue[i].typ == event.TypeAgentStart {
			c.decision.success, c.decision.disposition = true, string(piconv.DispositionStarted)
			return
		}
	}
}

// decision is what a prompt's response says.
type decision struct {
	known       bool
	forced      bool
	success     bool
	disposition string
}

func (d decision) started() bool {
	return d.success && d.disposition == string(piconv.DispositionStarted)
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

// command opens the span of one command.
func (t *Tracker) command(c *command) {
	t.stats.Commands++
	if c.name == "prompt" {
		switch d := c.decision; {
		case d.started() && !t.m.Active():
			t.stats.Runs++
			t.startCommand(c, t.m.Open(c.at))
		case d.started():
			// The run before it has not settled yet in the stream: the
			// prompt opens its root once it has (see openDeferred).
			c.deferred = true
		default:
			t.startCommand(c, t.m.RootContext())
		}
	} else {
		t.startCommand(c, t.m.RootContext())
	}
	t.pending.add(c)
	for t.pending.len() > t.cfg.maxPending {
		old := t.pending.oldest()
		t.pending.remove(old)
		t.stats.Evicted++
		t.unanswered(old, piconv.EndEvicted, c.at)
	}
}

// startCommand starts c's span under parent. Outside a run the span is a
// short trace of its own (or a child of the caller's TRACEPARENT), linked
// to the latest run so that a reader can walk from one to the other.
func (t *Tracker) startCommand(c *command, parent context.Context) {
	// pi.rpc.command is a metric label: it only takes the bounded set of
	// span names; a type Pi does not know is kept beside it.
	attrs := []attribute.KeyValue{piconv.RPCCommandKey.String(c.name)}
	if c.name == nameUnknown && c.typ != "" {
		attrs = append(attrs, piconv.RPCTypeKey.String(clip(c.typ, 64)))
	}
	if c.id != "" {
		attrs = append(attrs, piconv.RPCIDKey.String(c.id))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(c.at)}
	opts = append(opts, t.sessionOptions(&attrs)...)
	opts = append(opts, trace.WithAttributes(attrs...))
	c.ctx, c.span = t.tracer.Start(parent, piconv.SpanRPC.Name(c.name), opts...)
}

// sessionOptions adds the session id, once known, and when no run is open
// a link to the latest run.
func (t *Tracker) sessionOptions(attrs *[]attribute.KeyValue) []trace.SpanStartOption {
	if id := t.m.SessionID(); id != "" {
		*attrs = append(*attrs, semconv.GenAIConversationID(id))
	}
	if t.m.Active() {
		return nil
	}
	if last := t.m.LastRoot(); last.IsValid() {
		return []trace.SpanStartOption{trace.WithLinks(trace.Link{
			SpanContext: last,
			Attributes:  []attribute.KeyValue{piconv.LinkKey.String(piconv.LinkPreviousRun)},
		})}
	}
	return nil
}

// openDeferred gives a started prompt its span, and its root when no run
// is open.
func (t *Tracker) openDeferred(c *command) {
	c.deferred = false
	if t.m.Active() {
		t.startCommand(c, t.m.RootContext())
		return
	}
	t.stats.Runs++
	t.startCommand(c, t.m.Open(c.at))
}

// unanswered ends a command that never got its response.
func (t *Tracker) unanswered(c *command, reason piconv.EndReason, at time.Time) {
	if c.deferred {
		t.openDeferred(c)
	}
	c.span.SetAttributes(piconv.UnfinishedKey.Bool(true), reason.Attr())
	if c.name == "bash" {
		c.span.SetAttributes(bashCounts(c)...)
	}
	c.span.SetStatus(codes.Error, "no response: "+string(reason))
	c.span.End(trace.WithTimestamp(at))
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
	t.m.Handle(&ev, it.at)
}

// response ends the span of the command r answers.
func (t *Tracker) response(r *wireResponse, at time.Time) {
	c := t.pending.take(r.key())
	d := r.data()
	if c == nil {
		t.stats.UnmatchedResponses++
		var name string
		_ = json.Unmarshal(r.Command, &name)
		t.learnSession(name, r.Success, d)
		return
	}
	t.stats.Responses++
	if c.deferred {
		t.openDeferred(c)
	}
	attrs := []attribute.KeyValue{piconv.RPCSuccessKey.Bool(r.Success)}
	if !r.Success {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(c, r.Error)))
		c.span.SetStatus(codes.Error, t.errorText(c, r.Error))
	}
	switch c.name {
	case "prompt", "steer", "follow_up":
		if d.Disposition != "" {
			attrs = append(attrs, piconv.RPCDispositionKey.String(d.Disposition))
		}
		if r.Success && d.Disposition == string(piconv.DispositionQueued) {
			t.queued(c, at)
		}
	case "bash":
		attrs = append(attrs, bashCounts(c)...)
		if d.ExitCode != nil {
			attrs = append(attrs, piconv.BashExitCodeKey.Int(*d.ExitCode))
		}
		if r.Success {
			attrs = append(attrs, piconv.BashCancelledKey.Bool(d.Cancelled != nil && *d.Cancelled))
		}
		if d.Truncated != nil {
			attrs = append(attrs, piconv.BashTruncatedKey.Bool(*d.Truncated))
		}
	case "new_session", "switch_session", "fork", "clone":
		if d.Cancelled != nil {
			attrs = append(attrs, piconv.RPCCancelledKey.Bool(*d.Cancelled))
		}
	}
	if t.learnSession(c.name, r.Success, d) {
		attrs = append(attrs, semconv.GenAIConversationID(d.SessionID))
	}
	c.span.SetAttributes(attrs...)
	c.span.End(trace.WithTimestamp(at))
}

func bashCounts(c *command) []attribute.KeyValue {
	return []attribute.KeyValue{
		piconv.BashChunksKey.Int64(c.chunks),
		piconv.BashBytesKey.Int64(c.bytes),
	}
}

// learnSession keeps the mapper's session id current from what the
// controller itself asked: get_state and get_session_stats carry it, and
// a session switch makes it stale until the controller asks again. It
// reports whether it learnt a new id.
func (t *Tracker) learnSession(command string, success bool, d responseData) bool {
	if !success {
		return false
	}
	switch command {
	case "get_state", "get_session_stats":
		if d.SessionID != "" && d.SessionID != t.m.SessionID() {
			t.m.SetSessionID(d.SessionID)
			// The spans still open learn it too, as the mapper's do.
			conv := semconv.GenAIConversationID(d.SessionID)
			for _, c := range t.pending.all() {
				if c.span != nil {
					c.span.SetAttributes(conv)
				}
			}
			for _, x := range t.dialogs.all() {
				x.span.SetAttributes(conv)
			}
			return true
		}
	case "new_session", "switch_session", "fork", "clone":
		if d.Cancelled == nil || !*d.Cancelled {
			t.m.SetSessionID("")
		}
	}
	return false
}

// queued marks a message Pi queued into the open run: its turns land in
// that run's root, and the event says where they came from.
func (t *Tracker) queued(c *command, at time.Time) {
	if !t.m.Active() {
		return
	}
	kind := c.name
	if c.name == "prompt" {
		kind = string(piconv.QueueSteer)
		if c.streaming == "followUp" {
			kind = string(piconv.QueueFollowUp)
		}
	}
	attrs := []attribute.KeyValue{
		piconv.RPCCommandKey.String(c.name),
		piconv.QueueKindKey.String(kind),
	}
	if c.id != "" {
		attrs = append(attrs, piconv.RPCIDKey.String(c.id))
	}
	trace.SpanFromContext(t.m.RootContext()).AddEvent(piconv.EventRPCQueued,
		trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

// bashUpdate counts the output of a direct bash command; the output
// itself is content and is not kept.
func (t *Tracker) bashUpdate(rec []byte) {
	var u struct {
		ID    json.RawMessage `json:"id"`
		Delta string          `json:"delta"`
	}
	if json.Unmarshal(rec, &u) != nil {
		return
	}
	c := t.pending.peek(key{id: jsonKey(u.ID), typ: "s:bash"})
	if c == nil {
		return
	}
	c.chunks++
	c.bytes += int64(len(u.Delta))
}

// extensionError records an extension_error on the innermost open span: the
// run's, else the command being handled (an extension command, a session
// switch), else nowhere but the counters.
func (t *Tracker) extensionError(rec []byte, at time.Time) {
	t.stats.ExtensionErrors++
	ev, _ := event.Decode(rec, t.decode)
	if !t.m.Active() {
		if c := t.pending.latestOpen(); c != nil {
			attrs := []attribute.KeyValue{
				piconv.ExtensionPathKey.String(ev.ExtensionPath),
				piconv.ExtensionEventKey.String(ev.Event),
			}
			if s := t.cfg.content; s != nil {
				attrs = append(attrs, piconv.ExtensionErrorKey.String(s.Scrub(ev.Error)))
			}
			c.span.AddEvent(piconv.EventExtensionError, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
			return
		}
	}
	t.m.ExtensionError(&ev, at)
}
