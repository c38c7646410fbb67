package session

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// FindParentTool returns a Config.ParentTool that reads the parent's
// session file (at most maxBytes) and finds the execute_tool span whose
// result names the child's session file. A span's id depends on the spans
// its run created before it, so the parent's file is traced again, in
// memory, by a FileMapper configured as replay and watch configure theirs
// (children read from their files), and nothing is exported or counted:
// the spans go to a TracerProvider of its own. A parent traced under a
// caller's TRACEPARENT has other ids, and the link then leads nowhere.
func FindParentTool(maxBytes int64) func(parentSession, childID string) (trace.SpanContext, bool) {
	return func(parentSession, childID string) (trace.SpanContext, bool) {
		if childID == "" {
			return trace.SpanContext{}, false
		}
		id := []byte(childID)
		named := false
		// A first pass, line by line, for the child's id: most parents
		// (forks' origins) do not name it, and are not traced.
		if eachLine(parentSession, maxBytes, func(_ int64, line []byte) bool {
			named = bytes.Contains(line, id)
			return !named
		}) != nil || !named {
			return trace.SpanContext{}, false
		}
		f := &toolFinder{child: vocab.NestedSessionIDKey.String(childID)}
		ids := &IDs{}
		tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(ids), sdktrace.WithSpanProcessor(f))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		fm := New(Config{TracerProvider: tp, IDs: ids, ChildSessions: nested.ReadSessionFile(nested.DefaultLimits.MaxBytes), Path: parentSession})
		if eachLine(parentSession, maxBytes, func(off int64, line []byte) bool {
			fm.Line(off, line)
			return !f.found.IsValid()
		}) != nil {
			return trace.SpanContext{}, false
		}
		if !f.found.IsValid() {
			fm.Close(agentmap.Ending{Reason: vocab.EndEOF})
		}
		return f.found, f.found.IsValid()
	}
}

// eachLine calls fn with each line of the regular file at path (at most
// maxBytes long) and its offset, until fn returns false. Memory follows
// the longest line, not the file.
func eachLine(path string, maxBytes int64, fn func(off int64, line []byte) bool) error {
	// A header names any path: only a regular file is opened.
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return fmt.Errorf("session: %s is not a regular file", path)
	case st.Size() > maxBytes:
		return fmt.Errorf("session: %s is over %d bytes", path, maxBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.LimitReader(f, maxBytes), 64<<10)
	var off int64
	for {
		line, err := r.ReadBytes('\n')
		if n := len(line); n > 0 {
			if !fn(off, bytes.TrimSuffix(line, []byte{'\n'})) {
				return nil
			}
			off += int64(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// toolFinder notes the parent of the nested invoke_agent span read from
// the child's session file: the tool span that ran it.
type toolFinder struct {
	child attribute.KeyValue
	found trace.SpanContext
}

func (f *toolFinder) OnStart(_ context.Context, s sdktrace.ReadWriteSpan) {
	if f.found.IsValid() {
		return
	}
	for _, kv := range s.Attributes() {
		if kv == f.child {
			f.found = s.Parent()
			return
		}
	}
}

func (f *toolFinder) OnEnd(sdktrace.ReadOnlySpan)      {}
func (f *toolFinder) Shutdown(context.Context) error   { return nil }
func (f *toolFinder) ForceFlush(context.Context) error { return nil }
