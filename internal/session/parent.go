package session

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
)

// maxNotedChildren bounds what ParentTools remembers: past it, it forgets
// the child noted first, and reads its parent's file again if asked.
const maxNotedChildren = 1 << 16

// ParentTools finds the execute_tool span that ran a child session, for
// the link from the child's first run (Config.ParentTools). A span's id
// derives from its run's key and its place (package spanid), so the link
// is computed, never traced again: from what FileMappers sharing it noted
// while tracing the parents (watch follows both: no read at all; a
// restarted watch gets them back from its state, Restore), else from the
// parent's file, read once to find the run that holds the tool call
// (replay of the child alone). Safe for concurrent use.
type ParentTools struct {
	maxBytes int64
	mu       sync.Mutex
	noted    map[string]trace.SpanContext // child session id → its tool span
	order    []string                     // the children noted, oldest first
	changes  uint64                       // counts the changes to noted
	reads    atomic.Int64
}

// Link is a child session and the execute_tool span that ran it.
type Link struct {
	Child string
	Tool  trace.SpanContext
}

// NewParentTools returns a ParentTools that reads parents' files of at
// most maxBytes.
func NewParentTools(maxBytes int64) *ParentTools {
	return &ParentTools{maxBytes: maxBytes, noted: map[string]trace.SpanContext{}}
}

// Reads is how many parents' files it has read.
func (p *ParentTools) Reads() int64 { return p.reads.Load() }

// note records that the tool span sc ran the child session child.
func (p *ParentTools) note(child string, sc trace.SpanContext) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.noted[child]; ok {
		if !old.Equal(sc) {
			p.noted[child] = sc
			p.changes++
		}
		return
	}
	if len(p.order) >= maxNotedChildren {
		delete(p.noted, p.order[0])
		p.order[0] = ""
		p.order = p.order[1:]
	}
	p.noted[child] = sc
	p.order = append(p.order, child)
	p.changes++
}

// Links returns the newest n links noted, oldest first, and the count of
// changes they reflect: while Changes returns the same, they are the same.
func (p *ParentTools) Links(n int) ([]Link, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	from := max(0, len(p.order)-n)
	out := make([]Link, 0, len(p.order)-from)
	for _, c := range p.order[from:] {
		out = append(out, Link{Child: c, Tool: p.noted[c]})
	}
	return out, p.changes
}

// Changes counts the changes to the links noted.
func (p *ParentTools) Changes() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.changes
}

// Restore notes links kept from an earlier process (oldest first), as if
// its parents had been traced here: their children need no read.
func (p *ParentTools) Restore(links []Link) {
	for _, l := range links {
		if l.Child != "" && l.Tool.IsValid() {
			p.note(l.Child, l.Tool)
		}
	}
}

// Find returns the span context of the execute_tool span in the parent's
// session file (parentSession) that ran session childID. Its trace id is
// the one the parent's run has with no caller's TRACEPARENT.
func (p *ParentTools) Find(parentSession, childID string) (trace.SpanContext, bool) {
	if childID == "" {
		return trace.SpanContext{}, false
	}
	p.mu.Lock()
	sc, ok := p.noted[childID]
	p.mu.Unlock()
	if ok {
		return sc, true
	}
	p.reads.Add(1)
	// The parent's runs are grouped, not traced: the run that holds the
	// result naming the child gives the key, the call its place.
	fm := New(Config{TracerProvider: noop.NewTracerProvider(), Path: parentSession, ChildSessions: headerOnly(p.maxBytes)})
	fm.dry = true
	fm.onResult = func(r *runBuf, e *entry) bool {
		found := false
		for _, run := range e.msg.nested.Runs {
			if run.Session == "" {
				continue
			}
			tool, _ := r.toolContext(e.msg.ToolCallID)
			// Every child met on the way is noted: its siblings, asked
			// next, need no read of this file.
			p.note(run.Session, tool)
			if run.Session == childID {
				sc, found = tool, true
			}
		}
		return found
	}
	if eachLine(parentSession, p.maxBytes, func(off int64, line []byte) bool {
		fm.Line(off, line)
		return !sc.IsValid()
	}) != nil {
		return trace.SpanContext{}, false
	}
	return sc, sc.IsValid()
}

// headerOnly is the SessionReader of a dry FileMapper: a child's session
// id from its header, none of its messages.
func headerOnly(maxBytes int64) nested.SessionReader {
	return func(path string) ([]json.RawMessage, string, error) {
		var id string
		err := eachLine(path, maxBytes, func(_ int64, line []byte) bool {
			if h := event.ReadHeader(line); h.IsSession() {
				id = h.ID
			}
			return false
		})
		if err != nil || id == "" {
			return nil, "", fmt.Errorf("session: %s has no header", path)
		}
		return []json.RawMessage{}, id, nil
	}
}

// eachLine calls fn with each line of the regular file at path (at most
// maxBytes long) but the blank ones, and its offset, until fn returns
// false. Memory follows the longest line, not the file.
func eachLine(path string, maxBytes int64, fn func(off int64, line []byte) bool) error {
	f, err := nested.OpenFile(path, maxBytes)
	if err != nil {
		return err
	}
	defer f.Close()
	r := framing.NewReader(io.LimitReader(f, maxBytes))
	for {
		line, err := r.Next()
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		case !fn(r.Offset(), line):
			return nil
		}
	}
}
