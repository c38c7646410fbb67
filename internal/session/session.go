// Package session traces Pi's session files: the JSONL every Pi mode
// (TUI, -p, json, rpc) persists unless --no-session. It decodes entries
// (migrating version 1 and 2 files as Pi does), groups them into runs as
// agent_settled groups them in the stream, and turns each run into the
// same events the stream mapper reads, so a session file gives the very
// span model, metrics and privacy rules of a live run. docs/sessions.md
// has the mapping.
//
// The contract a follower (pi-otel watch, the TUI mode of run) builds on:
//
//   - New(cfg) returns a FileMapper for one session file.
//   - Line(off, b) feeds one complete line (without its LF) that starts at
//     byte offset off. Damaged lines are counted and skipped. Predecode
//     splits it in two, so that a reader can decode lines on a goroutine
//     of its own, ahead of the mapping (internal/readahead).
//   - A run is complete as soon as the next run has begun, or the file
//     moved to another branch. Idle(now, settle) completes the open run
//     when its last entry is a final answer and it has been quiet for
//     settle. Close(end) completes whatever is open; a run that never
//     reached a final answer is closed unsettled.
//   - Each run, once complete, is handed to Config.Runs, which decides
//     whether it is traced (Run.Trace; its root span ends then): a
//     follower traces each run once, keyed by the session and its first
//     entry (ids derive from the keys, see package spanid).
//   - Committed() is the byte offset just past the last entry of the last
//     run completed: a follower that restarts at 0 and passes over the
//     runs that begin before it traces nothing twice.
//   - Starts(b) tells whether a first line starts a session file; Pi's
//     json mode starts its stdout with the same header, so Classify(head)
//     tells a session file from an event stream by the lines that follow.
package session

import (
	"cmp"
	"context"
	"hash/fnv"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// ScopeName is the instrumentation scope of the spans only session files
// give (pi.bash); the rest come from the mapper's scope.
// Public and stable, like every scope (docs/span-model.md).
const ScopeName = "github.com/pi-otel/pi-otel/session"

// Config is a FileMapper's configuration.
type Config struct {
	// TracerProvider receives the spans. Its IDGenerator should be a
	// spanid.Generator, so that trace and span ids derive from the
	// session and entry ids (a run's key) and the spans' places in the
	// run; any other generator gives random ids.
	TracerProvider trace.TracerProvider
	// Parent, if set, is the parent of every root (the caller's TRACEPARENT).
	Parent context.Context
	// Content, if set, turns on content capture (agentmap.WithContent).
	Content agentmap.Content
	// ChildSessions, if set, reads the child session files that tool
	// results name (`sessionFile` in a results[] entry): the child's runs
	// are traced below the tool from its own file, in place of the
	// result's copy of its messages. nested.ReadSessionFile reads them
	// from this machine.
	ChildSessions nested.SessionReader
	// Path is the session file's path, when the input is a file: a
	// relative sessionFile resolves against its folder (else against the
	// header's cwd), and a result naming this very file is a cycle, not
	// followed (nested.Origin).
	Path string
	// ParentTools, if set, finds the execute_tool span of the tool that ran
	// this file's session, when its header names a parentSession and the
	// file is not a fork: the first run's root links to it. FileMappers
	// that share one tell it the tools they trace that ran children.
	ParentTools *ParentTools
	// NestedOnce, if set, traces nothing of a child session whose parent's
	// file names it: the parent's trace holds its runs (watch sees both).
	NestedOnce bool
	// Runs, if set, is handed each run as it completes, and each entry
	// traced on its own (a ! command, a compaction between runs), in file
	// order, before anything of it is traced: it traces the run
	// (Run.Trace) or passes over it. A follower of many files traces each
	// run once this way, whichever file holds it. Unset, every run is
	// traced.
	Runs func(*Run)
	// BashCalls, if set, is handed the bash calls of each assistant
	// message entry, read by the line's decoding, once the line is fed:
	// ToolContext then names their spans. The commands are dropped after.
	BashCalls func(calls []event.BashCall)
	// Counts, if set, is added to as lines are fed: FileMappers that
	// share one give the totals of every file (the health metrics), read
	// on any goroutine while they map.
	Counts *Counts
}

// Counts are lines fed, those that did not decode, and those that held
// several entries (Stats' Lines, Damaged and Repaired), summed over the
// FileMappers that share them.
type Counts struct {
	Lines, Damaged, Repaired atomic.Int64
}

// Stats counts what a FileMapper saw. Mistyped entries are kept, without
// their fields of unexpected types; Repeated are entries (or tool results)
// the file holds a second time, traced once.
type Stats struct {
	Lines, Entries, Damaged, Unknown int64
	// Repaired are lines that held several entries, written with no LF
	// between them, read as those entries (event.SplitLine); what lay
	// between them that was none is in Damaged.
	Repaired           int64
	Mistyped, Repeated int64
	Runs, Skipped      int64
	// Nested are runs of a child session not traced on their own: the
	// parent's trace holds them (Config.NestedOnce).
	Nested int64
}

// FileMapper maps one session file to spans and metrics, as mapper.Mapper
// maps an event stream. Not safe for concurrent use.
type FileMapper struct {
	cfg    Config
	m      *agentmap.Mapper
	tracer trace.Tracer // for pi.bash
	dec    *decoder

	hdr     event.Header
	hdrSeen bool
	version int
	// fork is the header's time while the file names a parent session and
	// no entry persisted at or after it has come yet; held are the entries
	// before it, undecided (see Line).
	fork time.Time
	held []heldEntry
	// lost is set when the line before was damaged: the entry after it may
	// continue from the entry that line held.
	lost bool

	prevID string // the previous entry in file order
	cur    *runBuf
	// pending are entries between runs (settings, system prompts, bash
	// commands); they belong to the next run.
	pending []*entry
	// branchFrom is set when an entry did not continue from the previous
	// one: the next run starts a branch at that entry.
	branchFrom *string
	// runOf maps (a hash of) an entry id to the index in keys of the run it
	// belongs to, or of the run before it, so a branch can link to where it
	// came from; -1 for none. Hashes keep it small: a long file has a
	// million entries.
	runOf map[uint64]int32
	keys  []string

	// forkRun is the first entry id of the origin's run the fork was cut
	// from; the fork's first run links to it once.
	forkRun    string
	forkLinked bool
	forkPrev   time.Time

	// parentTool is the tool span of the parent that ran this child
	// session, once looked up (parentLooked).
	parentTool   trace.SpanContext
	parentLooked bool

	// dry groups runs without tracing them; onResult, if set, is told of
	// each tool result that carries nested work, in its run, until it
	// returns true (ParentTools.Find).
	dry      bool
	onResult func(r *runBuf, e *entry) bool

	committed int64
	stats     Stats
	results   event.Results // the translated run's tool calls with their result, for repeats
	// last is the newest entry time seen.
	last time.Time
}

// New returns a FileMapper.
func New(cfg Config) *FileMapper {
	cfg.Parent = cmp.Or(cfg.Parent, context.Background())
	cfg.Counts = cmp.Or(cfg.Counts, &Counts{})
	tp := cfg.TracerProvider
	opts := []agentmap.Option{agentmap.WithParent(cfg.Parent), agentmap.WithInexactTimes()}
	if cfg.Content != nil {
		opts = append(opts, agentmap.WithContent(cfg.Content))
	}
	dec := newDecoder(cfg.Content != nil, cfg.BashCalls != nil)
	dec.sessions = cfg.ChildSessions
	dec.from.File = cfg.Path
	return &FileMapper{
		cfg:     cfg,
		m:       agentmap.New(tp, opts...),
		tracer:  tp.Tracer(ScopeName, trace.WithSchemaURL(vocab.SchemaURL)),
		version: 3,
		runOf:   map[uint64]int32{},
		dec:     dec,
	}
}

// Line feeds one complete line (without its LF) that starts at byte offset
// off. Damaged lines are counted and skipped.
func (t *FileMapper) Line(off int64, b []byte) {
	t.feed(t.dec.line(off, b, !t.hdrSeen))
}

// Predecode splits Line in two, so that decoding (a third of a history's
// cost, over half with nested runs) can run on another goroutine while
// the lines before are mapped. The function it returns takes the lines
// after those fed so far, in order, on one goroutine; each call returns
// the rest of that line's work, to run in the same order on the goroutine
// that calls the FileMapper's methods, before any other of them. What it
// decodes aliases nothing of b.
func (t *FileMapper) Predecode() func(off int64, b []byte) func() {
	dec := newDecoder(t.cfg.Content != nil, t.cfg.BashCalls != nil)
	dec.sessions = t.cfg.ChildSessions
	dec.from = t.dec.from
	header := !t.hdrSeen
	return func(off int64, b []byte) func() {
		l := dec.line(off, b, header)
		if !l.blank {
			header = false
		}
		return func() { t.feed(l) }
	}
}

// feed maps one decoded line, Line's second half, and hands on its bash
// calls.
func (t *FileMapper) feed(l decodedLine) {
	t.stats.Lines++
	t.cfg.Counts.Lines.Add(1)
	if l.pieces == nil {
		t.feedRecord(l)
		return
	}
	t.stats.Repaired++
	t.cfg.Counts.Repaired.Add(1)
	for _, p := range l.pieces {
		t.feedRecord(p)
	}
}

// feedRecord maps one decoded record and hands on its bash calls.
func (t *FileMapper) feedRecord(l decodedLine) {
	t.feedLine(l)
	if e := l.e; e != nil && e.msg != nil && e.msg.bashCalls != nil {
		calls := e.msg.bashCalls
		e.msg.bashCalls = nil // the run holds the entry; not its commands
		t.cfg.BashCalls(calls)
	}
}

// feedLine maps one decoded record: a line, or a piece of one.
func (t *FileMapper) feedLine(l decodedLine) {
	if l.blank {
		return
	}
	off, end := l.off, l.end
	if !t.hdrSeen && !(l.piece && l.err == errDamaged) {
		// (Bytes between a title line and the header on one line are
		// damage, not the file's first line.)
		t.hdrSeen = true
		if h := l.hdr; h != nil {
			t.hdr = *h
			t.version = h.Version
			// As the stream's own header: the session id and the
			// project go on every span.
			t.m.Handle(agentmap.Input{Event: &event.Event{Type: event.TypeSession, ID: h.ID, Cwd: h.Cwd}})
			if h.ParentSession != "" {
				t.fork, _ = time.Parse(time.RFC3339Nano, h.Timestamp)
			}
			return
		}
		// No header (Pi would not load this file): keep what entries there are.
	}
	e, err := l.e, l.err
	if l.hdr != nil || err != nil || e.Type == typeSession {
		// A second header is damage, as it always was.
		t.stats.Damaged++
		t.cfg.Counts.Damaged.Add(1)
		t.lost = true
		return
	}
	if e.mistyped {
		t.stats.Mistyped++
	}
	e.off, e.end = off, end
	if e.persist.After(t.last) {
		t.last = e.persist
	}
	t.stats.Entries++
	if !knownEntry[e.Type] {
		t.stats.Unknown++
	}
	// Version 1 files are a linear list: ids follow the file, as Pi's
	// migration makes them (Pi's are random; ours derive from the offset so
	// that tracing the file twice gives the same trace).
	if t.version >= 2 && e.ID != "" {
		e.idh = idHash(e.ID)
		if _, seen := t.runOf[e.idh]; seen {
			// Pi gives each entry an id unique in its file: the same id again
			// is the same entry written twice (a file re-saved by appending,
			// a copy tool). It is one event.
			t.stats.Repeated++
			t.lost = false
			return
		}
	} else {
		e.ID = "L" + strconv.FormatInt(off, 10)
		p := t.prevID
		if p == "" {
			e.ParentID = nil
		} else {
			e.ParentID = &p
		}
		e.idh = idHash(e.ID)
	}
	if t.version < 2 && e.msg != nil && e.msg.Role == "assistant" {
		e.msg.Provider = cmp.Or(e.msg.Provider, t.hdr.Provider)
		e.msg.Model = cmp.Or(e.msg.Model, t.hdr.ModelID, t.hdr.Model)
	}
	lost := t.lost
	t.lost = false
	if !t.fork.IsZero() {
		// A fork or clone: Pi writes the header, then copies the origin's
		// path with the entries' own times, then appends the fork's work.
		// The header's time is no bound on the entries, though: a file
		// re-saved or cloned by an extension keeps older entries under a
		// later header too. So the leading entries older than the header
		// are held until the file tells: an entry at or after the header is
		// the fork's own work, and what came before it the origin's history
		// (traced there, not here); a file that ends first is all its own
		// (Close).
		if !e.persist.IsZero() && e.persist.Before(t.fork) {
			t.runOf[e.idh] = -1 // known, for repeats and branches
			t.held = append(t.held, heldEntry{e, lost})
			return
		}
		for _, h := range t.held {
			t.history(h.e)
		}
		t.held, t.fork = nil, time.Time{}
	}
	t.accept(e, lost)
}

// heldEntry is an entry held while a fork's history is undecided, with
// whether the line before it was damaged.
type heldEntry struct {
	e    *entry
	lost bool
}

// history records e as the origin's history in a fork: known, not traced.
func (t *FileMapper) history(e *entry) {
	t.prevID = e.ID
	t.runOf[e.idh] = -1
	if e.msg != nil && e.msg.Role == "user" && (t.forkPrev.IsZero() || !msgTime(e.msg.Timestamp).Before(t.forkPrev)) {
		t.forkRun = e.ID
	}
	t.forkPrev = e.persist
	t.committed = e.end
}

// accept places an entry of this file's own; lost tells that the line
// before it was damaged.
func (t *FileMapper) accept(e *entry, lost bool) {
	if p := e.parent(); t.prevID != "" && p != t.prevID {
		if _, known := t.runOf[idHash(p)]; lost && p != "" && !known {
			// Its parent is no entry we have: most likely the damaged line
			// just before it. It continues the run rather than branching off.
		} else {
			// Pi appends to the current leaf: an entry that does not continue
			// from the previous one was written after /tree moved the leaf.
			// The run on the old branch is over; the next one starts a branch.
			from := p // p's address would move it to the heap on every entry
			t.branchFrom = &from
			if t.cur != nil {
				t.finish(t.cur, t.cur.final(), agentmap.Ending{Reason: vocab.EndEOF})
			}
		}
	}
	t.prevID = e.ID
	t.place(e)
	t.runOf[e.idh] = int32(len(t.keys)) - 1
	if t.onResult != nil && t.cur != nil && e.msg != nil && e.msg.Role == "toolResult" && e.msg.nested != nil && t.onResult(t.cur, e) {
		t.onResult = nil
	}
}

func idHash(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// runKey is the key of the run entry id belongs to, "" if none.
func (t *FileMapper) runKey(id string) string {
	i, ok := t.runOf[idHash(id)]
	if !ok || i < 0 {
		return ""
	}
	return t.keys[i]
}

// Idle traces the open run if its last entry is a final answer (an
// assistant message that stopped without tool calls, or an error or abort
// with nothing after it) and no entry came for settle before now.
// It reports whether a run was traced.
func (t *FileMapper) Idle(now time.Time, settle time.Duration) bool {
	r := t.cur
	if r == nil || !r.final() || now.Sub(r.lastPersist) < settle {
		return false
	}
	t.finish(r, true, agentmap.Ending{})
	return true
}

// Close traces whatever is open: the input ended (file deleted, Pi exited,
// end of a replayed file).
func (t *FileMapper) Close(end agentmap.Ending) {
	if held := t.held; len(held) > 0 {
		// Every entry is older than the header: the file was re-saved or
		// cloned with its history, not forked by Pi. It is all its own.
		t.held, t.fork = nil, time.Time{}
		for _, h := range held {
			t.accept(h.e, h.lost)
		}
	}
	if r := t.cur; r != nil {
		t.finish(r, r.final(), end)
	}
	t.flushBash()
}

// Committed is the offset just past the last entry of the last traced run.
func (t *FileMapper) Committed() int64 { return t.committed }

// LastEntry is the newest entry time seen (zero for none): when Pi last
// wrote to the file, whatever its modification time says (a copy has a
// new one).
func (t *FileMapper) LastEntry() time.Time { return t.last }

// SessionID is the header's id, once seen.
func (t *FileMapper) SessionID() string { return t.hdr.ID }

// Stats returns the counters.
func (t *FileMapper) Stats() Stats { return t.stats }

// finish hands r on to be traced (Config.Runs) and forgets it.
func (t *FileMapper) finish(r *runBuf, settled bool, end agentmap.Ending) {
	t.cur = nil
	if first := r.entries[0]; !t.dry && !t.hand(&Run{Session: t.hdr.ID, Key: r.key, Start: runStart(first), Off: first.off,
		t: t, r: r, settled: settled, end: end}) {
		t.stats.Skipped++
	}
	t.committed = max(t.committed, r.end)
}

// lookUpParent finds, once, the parent's tool span that ran this session,
// and reports whether there is one.
func (t *FileMapper) lookUpParent() bool {
	if !t.parentLooked && t.cfg.ParentTools != nil && t.hdr.ParentSession != "" && t.forkRun == "" {
		t.parentLooked = true
		if sc, ok := t.cfg.ParentTools.Find(t.hdr.ParentSession, t.hdr.ID); ok {
			t.parentTool = t.inCallerTrace(sc)
		}
	}
	return t.parentTool.IsValid()
}

// flushBash traces what happened between runs on its own: bash commands
// (run with !) and compactions with no run open (a manual /compact after
// the answer was traced), each a trace of its own, as the stream shows an
// idle compaction.
func (t *FileMapper) flushBash() {
	kept := t.pending[:0]
	for _, e := range t.pending {
		bash := e.msg != nil && e.msg.Role == "bashExecution"
		if !bash && e.Type != typeCompaction {
			kept = append(kept, e)
			continue
		}
		// A trace of its own, keyed by the entry as a run by its first.
		if !t.dry {
			t.hand(&Run{Session: t.hdr.ID, Key: t.hdr.ID + "/" + e.ID, Start: e.persist, Off: e.off, t: t, e: e})
		}
	}
	t.pending = kept
}

func runStart(e *entry) time.Time {
	if e.msg != nil && e.msg.Role == "user" {
		return at(e.msg, e)
	}
	return e.persist
}

// inCallerTrace is sc in the caller's trace, when there is one
// (Config.Parent): every root of ours takes its trace id, and keeps its
// derived span ids.
func (t *FileMapper) inCallerTrace(sc trace.SpanContext) trace.SpanContext {
	if p := trace.SpanContextFromContext(t.cfg.Parent); p.IsValid() {
		return sc.WithTraceID(p.TraceID())
	}
	return sc
}

// ToolContext is the span context of the execute_tool span of call callID
// in the open run (not yet traced): the one it will have, known from the
// keys as soon as the assistant message that names the call is read. It
// holds when the TracerProvider's IDGenerator is a spanid.Generator.
func (t *FileMapper) ToolContext(callID string) (trace.SpanContext, bool) {
	r := t.cur
	if r == nil || callID == "" {
		return trace.SpanContext{}, false
	}
	sc, named := r.toolContext(callID)
	if !named {
		return trace.SpanContext{}, false
	}
	return t.inCallerTrace(sc), true
}

// toolContext is the span context, in the run's own trace, of the last
// execute_tool span of call id in r: the model may use an id again, and
// each assistant message that names it has a span of its own. named says
// one does.
func (r *runBuf) toolContext(id string) (sc trace.SpanContext, named bool) {
	n := 0
	for _, e := range r.entries {
		if e.msg != nil && e.msg.Role == "assistant" && slices.Contains(e.msg.callIDs, id) {
			n++
		}
	}
	return spanid.SpanContext(spanid.TraceID(r.key), r.key, agentmap.ToolPath(id, max(n-1, 0))), n > 0
}
