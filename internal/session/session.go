// Package session traces Pi's session files: the JSONL every Pi mode
// (TUI, -p, json, rpc) persists unless --no-session. It decodes entries
// (migrating version 1 and 2 files as Pi does), groups them into runs as
// agent_settled groups them in the stream, and turns each run into the
// same events the stream mapper reads, so a session file gives the very
// span model, metrics and privacy rules of a live run.
//
// CONTRACT (agreed between the session, watch and run-TUI work; the
// bodies are filled in by the session work):
//
//   - New(cfg) returns a Tracer for one session file.
//   - Line(off, b) feeds one complete line (without its LF) that starts at
//     byte offset off. Damaged lines are counted and skipped.
//   - A run is traced (its root span ends) as soon as it is complete: the
//     next run has begun. Idle(now, settle) traces the open run when its
//     last entry is a final answer and it has been quiet for settle.
//     Close(end) traces whatever is open, marking unfinished spans.
//   - Committed() is the byte offset just past the last entry of the last
//     traced run: a follower that restarts at 0 and skips runs ending at or
//     before it traces nothing twice (ids are deterministic, see IDs).
//   - Sniff(b) tells a session file from an event stream by its first line.
package session

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper"
)

// Config is a Tracer's configuration.
type Config struct {
	// TracerProvider receives the spans. Its IDGenerator should be an
	// *IDs so that trace and span ids derive from the session and entry
	// ids; any other generator gives random ids.
	TracerProvider trace.TracerProvider
	// IDs is the TracerProvider's generator, when it is one.
	IDs *IDs
	// Parent, if set, is the parent of every root (the caller's TRACEPARENT).
	Parent context.Context
	// Content, if set, turns on content capture (mapper.WithContent).
	Content mapper.Content
	// SkipThrough: runs whose last entry ends at or before this offset are
	// decoded (for state) but not traced: a restarted follower's place.
	SkipThrough int64
	// Since: runs that began before it are decoded but not traced.
	Since time.Time
}

// Stats counts what a Tracer saw.
type Stats struct {
	Lines, Entries, Damaged, Unknown int64
	Runs, Skipped                    int64
}

// Tracer traces one session file. Not safe for concurrent use.
type Tracer struct {
	cfg Config
}

// New returns a Tracer.
func New(cfg Config) *Tracer { return &Tracer{cfg: cfg} }

// Line feeds one complete line that starts at byte offset off.
func (t *Tracer) Line(off int64, b []byte) { panic("session: not implemented yet") }

// Idle traces the open run if its last entry is a final answer (an
// assistant message that stopped without tool calls, or an error or abort
// with nothing after it) and no entry came for settle before now.
// It reports whether a run was traced.
func (t *Tracer) Idle(now time.Time, settle time.Duration) bool {
	panic("session: not implemented yet")
}

// Close traces whatever is open: the input ended (file deleted, Pi exited,
// end of a replayed file).
func (t *Tracer) Close(end mapper.Ending) { panic("session: not implemented yet") }

// Committed is the offset just past the last entry of the last traced run.
func (t *Tracer) Committed() int64 { panic("session: not implemented yet") }

// SessionID is the header's id, once seen.
func (t *Tracer) SessionID() string { panic("session: not implemented yet") }

// Stats returns the counters.
func (t *Tracer) Stats() Stats { panic("session: not implemented yet") }

// Sniff reports whether first, the first line of a file, is a Pi session
// header ({"type":"session",...} with a version, or a version-1 header).
// An event stream's first record is also {"type":"session"} in json mode,
// so Sniff must tell them apart by the fields that differ.
func Sniff(first []byte) bool { panic("session: not implemented yet") }

// IDs is an sdktrace.IDGenerator whose ids, after Seed(key), are a pure
// function of key and the order of the spans that follow, so the same file
// traced twice gives the same ids. Without a seed it is random.
type IDs struct{}

// Seed makes the ids that follow derive from key (e.g. session id + the
// run's first entry id).
func (g *IDs) Seed(key string) { panic("session: not implemented yet") }
