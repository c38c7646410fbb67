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
//   - A run is traced (its root span ends) as soon as it is complete: the
//     next run has begun, or the file moved to another branch. Idle(now,
//     settle) traces the open run when its last entry is a final answer and
//     it has been quiet for settle. Close(end) traces whatever is open; a
//     run that never reached a final answer is closed unsettled.
//   - Committed() is the byte offset just past the last entry of the last
//     traced run: a follower that restarts at 0 with Config.SkipThrough set
//     to it traces nothing twice (runs that begin before it are skipped; ids
//     are deterministic, see IDs).
//   - Sniff(b) tells whether a first line is a session header; Pi's json
//     mode starts its stdout with the same header, so Classify(head) tells
//     a session file from an event stream by the lines that follow.
package session

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// ScopeName is the instrumentation scope of the spans only session files
// give (pi.bash); the rest come from the mapper's scope.
const ScopeName = "github.com/pi-otel/pi-otel/internal/session"

// Config is a FileMapper's configuration.
type Config struct {
	// TracerProvider receives the spans. Its IDGenerator should be an
	// *IDs so that trace and span ids derive from the session and entry
	// ids; any other generator gives random ids.
	TracerProvider trace.TracerProvider
	// IDs is the TracerProvider's generator, when it is one.
	IDs *IDs
	// Parent, if set, is the parent of every root (the caller's TRACEPARENT).
	Parent context.Context
	// Content, if set, turns on content capture (agentmap.WithContent).
	Content agentmap.Content
	// SkipThrough: runs that begin before this offset are decoded (for
	// state) but not traced: a restarted follower's place, its Committed().
	// (Begin, not end: a run traced by Idle may gain entries, such as a
	// compaction Pi writes later, that a re-read groups into it.)
	SkipThrough int64
	// Since: runs that began before it are decoded but not traced.
	Since time.Time
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
	// ParentTool, if set, finds the execute_tool span of the tool that ran
	// this file's session, when its header names a parentSession and the
	// file is not a fork: the first run's root links to it. FindParentTool
	// finds it in the parent's file.
	ParentTool func(parentSession, childID string) (trace.SpanContext, bool)
	// NestedOnce, if set, traces nothing of a child session whose parent's
	// file names it: the parent's trace holds its runs (watch sees both).
	NestedOnce bool
	// Claims, if set, decides run by run what is traced, by key: a
	// follower of many files traces each run once, whichever file holds
	// it (a copy, a backup, a file replaced by another).
	Claims Claims
	// Uncounted, if set, runs the tracing of a run Claims says not to
	// count, so that the span metrics leave it out.
	Uncounted func(trace func())
}

// Claims decides which runs a FileMapper traces. A key is the session id
// and the id of the run's first entry (or of a lone entry: a ! command, a
// compaction between runs); start is when the run began. Both identify
// the run: ids change when Pi migrates an old file, times do not.
type Claims interface {
	// Claim reports whether the run is traced now, and if so whether it
	// counts in the span metrics (not when it is traced again after a
	// failed export).
	Claim(session, key string, start time.Time) (trace, count bool)
	// Traced records a run an earlier pi-otel traced, known then only by
	// its offset (SkipThrough), so that it is never traced again.
	Traced(session, key string, start time.Time)
}

// Stats counts what a FileMapper saw. Mistyped entries are kept, without
// their fields of unexpected types; Repeated are entries (or tool results)
// the file holds a second time, traced once.
type Stats struct {
	Lines, Entries, Damaged, Unknown int64
	Mistyped, Repeated               int64
	Runs, Skipped                    int64
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

	hdr     header
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

	committed int64
	stats     Stats
	answered  []string // the translators' buffer, see translator.answered
	// last is the newest entry time seen.
	last time.Time
}

// runBuf is an open run: its entries, held until it is complete.
type runBuf struct {
	key         string
	entries     []*entry
	pending     []*entry
	branch      *string
	lastPersist time.Time // of its last entry
	lastMsg     time.Time // of its last user, assistant or tool result message
	end         int64     // offset just past its last entry
}

// New returns a FileMapper.
func New(cfg Config) *FileMapper {
	if cfg.Parent == nil {
		cfg.Parent = context.Background()
	}
	tp := cfg.TracerProvider
	opts := []agentmap.Option{agentmap.WithParent(cfg.Parent), agentmap.WithInexactTimes()}
	if cfg.Content != nil {
		opts = append(opts, agentmap.WithContent(cfg.Content))
	}
	dec := newDecoder(cfg.Content != nil)
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
	dec := newDecoder(t.cfg.Content != nil)
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

// decodedLine is one line, decoded, for feed.
type decodedLine struct {
	off, end int64
	blank    bool
	hdr      *header // the line is a header, and the first non-blank one
	e        *entry
	err      error
}

// line decodes one line; header says it is the first non-blank line, to
// be read as the file's header if it is one.
func (d *decoder) line(off int64, b []byte, header bool) decodedLine {
	l := decodedLine{off: off, end: off + int64(len(b)) + 1}
	b = bytes.TrimRight(b, "\r")
	if len(bytes.TrimSpace(b)) == 0 {
		l.blank = true
		return l
	}
	if header {
		if h, ok := decodeHeader(b); ok {
			l.hdr = &h
			d.from.Cwd = h.Cwd
			return l
		}
	}
	l.e, l.err = d.decode(b)
	return l
}

// feed maps one decoded line: Line's second half.
func (t *FileMapper) feed(l decodedLine) {
	t.stats.Lines++
	if l.blank {
		return
	}
	off, end := l.off, l.end
	if !t.hdrSeen {
		t.hdrSeen = true
		if h := l.hdr; h != nil {
			t.hdr = *h
			t.version = h.version()
			// As the stream's own header: the session id and the
			// project go on every span.
			t.m.Handle(&event.Event{Type: event.TypeSession, ID: h.ID, Cwd: h.Cwd}, time.Time{})
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
	if t.cfg.Content == nil {
		// Only what counts and ids need stays: a tool's output can be
		// megabytes, and nothing reads it without capture.
		if e.msg != nil && e.msg.Role == "toolResult" {
			e.msg.Content = nil
		}
		if e.msg != nil {
			e.msg.Raw = nil
		}
		e.RawMsg = nil
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
		if e.msg.Provider == "" {
			e.msg.Provider = t.hdr.Provider
		}
		if e.msg.Model == "" {
			e.msg.Model = t.hdr.ModelID
			if e.msg.Model == "" {
				e.msg.Model = t.hdr.Model
			}
		}
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

// place puts an entry in the open run, a new run, or the pending list.
func (t *FileMapper) place(e *entry) {
	role := ""
	if e.msg != nil {
		role = e.msg.Role
	}
	switch {
	case role == "user":
		created := msgTime(e.msg.Timestamp)
		// Steering and follow-up messages were created while the run was
		// busy, before its last message was written: they join it. Only the
		// conversation's messages tell: extensions may write entries between
		// a prompt's creation and its persistence.
		if t.cur != nil && !created.IsZero() && created.Before(t.cur.lastMsg) {
			t.add(e)
			return
		}
		t.open(e)
	case role == "bashExecution":
		if t.cur != nil && msgTime(e.msg.Timestamp).Before(t.cur.lastPersist) {
			t.add(e)
			return
		}
		t.pending = append(t.pending, e)
	case role == "assistant" || role == "toolResult":
		if t.cur == nil {
			t.open(e) // a file that starts mid-run
			return
		}
		t.add(e)
	case e.Type == typeCompaction || e.Type == typeContextEdit || e.Type == typeUsage ||
		e.Type == typeBranchSummary || e.Type == typeCustomMessage || role == "custom":
		if t.cur != nil {
			t.add(e)
			return
		}
		t.pending = append(t.pending, e)
	default:
		// Settings, labels, names, extension state, system prompts: part of
		// a busy run, else of the next one.
		if t.cur != nil && !t.cur.final() {
			t.add(e)
			return
		}
		t.pending = append(t.pending, e)
	}
}

func (t *FileMapper) add(e *entry) {
	r := t.cur
	r.entries = append(r.entries, e)
	if !e.persist.IsZero() {
		r.lastPersist = e.persist
		if conversation(e) {
			r.lastMsg = e.persist
		}
	}
	r.end = e.end
}

// conversation reports whether e is a message of the conversation itself:
// the user's, the model's or a tool's.
func conversation(e *entry) bool {
	if e.msg == nil {
		return false
	}
	switch e.msg.Role {
	case "user", "assistant", "toolResult":
		return true
	}
	return false
}

// injected reports whether e is an entry an extension wrote.
func injected(e *entry) bool {
	return e.Type == typeCustom || e.Type == typeCustomMessage || e.msg != nil && e.msg.Role == "custom"
}

// open completes the open run, if any, and opens one at e.
func (t *FileMapper) open(e *entry) {
	var moved []*entry
	if r := t.cur; r != nil {
		moved = r.cutInjected(msgTime(e.msg.Timestamp))
		// A run that had not reached a final answer when the next began was
		// cut short (Pi killed mid-run, then resumed): closed unsettled.
		t.finish(r, r.final(), agentmap.Ending{Reason: vocab.EndEOF})
	}
	t.flushBash()
	pending := t.pending
	if moved != nil {
		pending = append(moved, pending...)
	}
	r := &runBuf{key: t.hdr.ID + "/" + e.ID, pending: pending, branch: t.branchFrom}
	t.pending, t.branchFrom = nil, nil
	t.cur = r
	t.keys = append(t.keys, r.key)
	t.add(e)
}

// cutInjected removes and returns the entries extensions wrote at the end
// of the run, after its last message, once the next prompt had been
// created (at created, if known): they were written for that prompt.
func (r *runBuf) cutInjected(created time.Time) []*entry {
	if created.IsZero() {
		return nil
	}
	i := len(r.entries)
	for i > 1 && injected(r.entries[i-1]) && !r.entries[i-1].persist.Before(created) {
		i--
	}
	if i == len(r.entries) {
		return nil
	}
	moved := append([]*entry(nil), r.entries[i:]...)
	r.entries = r.entries[:i]
	r.end = r.entries[i-1].end
	return moved
}

// final reports whether the run's last message is a final answer: an
// assistant message that asked for no tool.
func (r *runBuf) final() bool {
	edited := false
	for i := len(r.entries) - 1; i >= 0; i-- {
		e := r.entries[i]
		if e.msg == nil {
			edited = edited || e.Type == typeContextEdit
			continue
		}
		switch e.msg.Role {
		case "assistant":
			if e.msg.StopReason == "error" && edited {
				return false // Pi hid the failed attempt to retry it
			}
			return len(e.msg.callIDs) == 0 || e.msg.StopReason == "aborted"
		case "user", "toolResult", "custom", "bashExecution":
			return false
		}
	}
	return false
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

// finish traces r (or skips it, see Config) and forgets it.
func (t *FileMapper) finish(r *runBuf, settled bool, end agentmap.Ending) {
	t.cur = nil
	first := r.entries[0]
	switch trace, count := t.claim(r.key, first.off, runStart(first)); {
	case !trace:
		t.stats.Skipped++
	case t.lookUpParent() && t.cfg.NestedOnce:
		t.stats.Nested++
	default:
		t.stats.Runs++
		t.uncounted(!count, func() { t.withSeed(r.key, func() { t.translate(r, settled, end) }) })
	}
	if r.end > t.committed {
		t.committed = r.end
	}
}

// claim decides whether the run or lone entry keyed key, starting at
// offset off and time start, is traced, and whether it counts.
func (t *FileMapper) claim(key string, off int64, start time.Time) (trace, count bool) {
	if off < t.cfg.SkipThrough {
		if t.cfg.Claims != nil {
			t.cfg.Claims.Traced(t.hdr.ID, key, start)
		}
		return false, false
	}
	if !t.cfg.Since.IsZero() && start.Before(t.cfg.Since) {
		return false, false
	}
	if t.cfg.Claims == nil {
		return true, true
	}
	return t.cfg.Claims.Claim(t.hdr.ID, key, start)
}

// uncounted runs f, with the spans it ends kept out of the span metrics
// when skip is set (Config.Uncounted).
func (t *FileMapper) uncounted(skip bool, f func()) {
	if skip && t.cfg.Uncounted != nil {
		t.cfg.Uncounted(f)
		return
	}
	f()
}

// lookUpParent finds, once, the parent's tool span that ran this session,
// and reports whether there is one: outside withSeed, since finding it
// traces the parent's file.
func (t *FileMapper) lookUpParent() bool {
	if !t.parentLooked && t.cfg.ParentTool != nil && t.hdr.ParentSession != "" && t.forkRun == "" {
		t.parentLooked = true
		if sc, ok := t.cfg.ParentTool(t.hdr.ParentSession, t.hdr.ID); ok {
			t.parentTool = sc
		}
	}
	return t.parentTool.IsValid()
}

// withSeed creates spans with ids derived from key.
func (t *FileMapper) withSeed(key string, f func()) {
	if g := t.cfg.IDs; g != nil {
		g.run.Lock()
		defer g.run.Unlock()
		g.Seed(key)
		defer g.unseed()
	}
	f()
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
		key := t.hdr.ID + "/" + e.ID
		trace, count := t.claim(key, e.off, e.persist)
		if !trace {
			continue
		}
		t.uncounted(!count, func() {
			t.withSeed(key, func() {
				if bash {
					t.bashSpan(t.cfg.Parent, e, true)
					return
				}
				x := &translator{t: t, m: t.m, now: e.persist}
				x.compaction(e)
			})
		})
		// Entries still pending belong to a later run, which ends after
		// this: a restart re-reads them from the start anyway.
		if e.end > t.committed {
			t.committed = e.end
		}
	}
	t.pending = kept
}

func runStart(e *entry) time.Time {
	if e.msg != nil && e.msg.Role == "user" {
		if ts := msgTime(e.msg.Timestamp); !ts.IsZero() {
			return ts
		}
	}
	return e.persist
}

// Sniff reports whether first, the first line of a file, is a Pi session
// header ({"type":"session",...} with a version, or a version-1 header).
// Pi's json mode starts its event stream with the very same header, so a
// true answer means "a session file or a json-mode stream": Classify tells
// them apart from the lines that follow.
func Sniff(first []byte) bool {
	h, ok := decodeHeader(bytes.TrimRight(first, "\r\n"))
	return ok && h.ID != ""
}

// Starts reports whether first, the first line of a file, starts a
// session file: a header (Sniff), or an entry of a file without one, which
// Pi would not load but replay and watch trace by its entries.
func Starts(first []byte) bool {
	first = bytes.TrimRight(first, "\r\n")
	if Sniff(first) {
		return true
	}
	var rec struct {
		Type string `json:"type"`
	}
	return isObject(first) && json.Unmarshal(first, &rec) == nil && knownEntry[rec.Type]
}

// Kind is what Classify found a file to be.
type Kind int

const (
	KindUnknown Kind = iota // neither: not a Pi file
	KindSession             // a session file (or only its header so far)
	KindStream              // a Pi event stream (json or rpc mode stdout)
)

func (k Kind) String() string {
	switch k {
	case KindSession:
		return "session file"
	case KindStream:
		return "event stream"
	}
	return "unknown"
}

// streamTypes are records that only an event stream has.
var streamTypes = map[string]bool{
	"agent_start": true, "agent_end": true, "agent_settled": true, "turn_start": true, "turn_end": true,
	"message_start": true, "message_update": true, "message_end": true, "tool_execution_start": true,
	"tool_execution_update": true, "tool_execution_end": true, "queue_update": true, "entry_appended": true,
	"compaction_start": true, "compaction_end": true, "auto_retry_start": true, "auto_retry_end": true,
	"session_info_changed": true, "thinking_level_changed": true, "response": true, "extension_error": true,
	"extension_ui_request": true, "bash_execution_update": true,
}

// Classify tells a session file from an event stream by its first lines
// (head: the start of the file, whole lines; a cut-off last line is
// ignored). Lines that are not Pi records are passed over; the first that
// is decides: a session header followed by an entry, or a header alone, is
// a session file; any record only streams have is a stream.
func Classify(head []byte) Kind {
	lines := bytes.Split(head, []byte("\n"))
	lines = lines[:len(lines)-1] // after the last LF: empty, or cut off
	sawHeader := false
	for _, l := range lines {
		l = bytes.TrimSpace(l)
		var rec struct {
			Type string `json:"type"`
		}
		if len(l) == 0 || json.Unmarshal(l, &rec) != nil {
			continue
		}
		switch {
		case rec.Type == typeSession && Sniff(l):
			sawHeader = true
		case streamTypes[rec.Type]:
			return KindStream
		case knownEntry[rec.Type]:
			return KindSession
		}
	}
	if sawHeader {
		return KindSession
	}
	return KindUnknown
}
