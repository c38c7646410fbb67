package session

import (
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
func FindParentTool(maxBytes int) func(parentSession, childID string) (trace.SpanContext, bool) {
	return func(parentSession, childID string) (trace.SpanContext, bool) {
		b, err := readBounded(parentSession, maxBytes)
		if err != nil || childID == "" || !bytes.Contains(b, []byte(childID)) {
			return trace.SpanContext{}, false
		}
		f := &toolFinder{child: vocab.NestedSessionIDKey.String(childID)}
		ids := &IDs{}
		tp := sdktrace.NewTracerProvider(sdktrace.WithIDGenerator(ids), sdktrace.WithSpanProcessor(f))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		fm := New(Config{TracerProvider: tp, IDs: ids, ChildSessions: nested.ReadSessionFile(nested.DefaultLimits.MaxBytes)})
		var off int64
		for len(b) > 0 && !f.found.IsValid() {
			line := b
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				line, b = b[:i], b[i+1:]
			} else {
				b = nil
			}
			fm.Line(off, line)
			off += int64(len(line)) + 1
		}
		if !f.found.IsValid() {
			fm.Close(agentmap.Ending{Reason: vocab.EndEOF})
		}
		return f.found, f.found.IsValid()
	}
}

func readBounded(path string, maxBytes int) ([]byte, error) {
	// A header names any path: only a regular file is opened.
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("session: %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(maxBytes)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBytes {
		return nil, fmt.Errorf("session: %s is over %d bytes", path, maxBytes)
	}
	return b, nil
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
