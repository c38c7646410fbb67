package sessionwatch

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/session"
)

// errDamagedChildren is a state whose children's tool spans do not decode.
var errDamagedChildren = errors.New("its children's tool spans do not decode")

// maxSavedChildren bounds the links the state keeps: the newest, since a
// restart mostly meets the children of parents traced shortly before it.
// An older child asked for is found by reading its parent's file, as
// before. About 110 bytes a link in the state.
const maxSavedChildren = 1 << 12

// ChildState is a child session and the execute_tool span of its parent
// that ran it (session.ParentTools), kept so that a child seen after a
// restart is linked to its parent's tool without reading the parent's
// file again.
type ChildState struct {
	Session string `json:"session"`
	// Tool is the span's context as a W3C traceparent, as the parent's
	// trace gave it: the link is the one the earlier process would have
	// made.
	Tool string `json:"tool"`
}

// restoreChildren hands the state's links to the parents' tools.
func restoreChildren(pt *session.ParentTools, cs []ChildState) error {
	links := make([]session.Link, 0, len(cs))
	for _, c := range cs {
		sc, ok := decodeTool(c.Tool)
		if !ok || c.Session == "" {
			return errDamagedChildren
		}
		links = append(links, session.Link{Child: c.Session, Tool: sc})
	}
	pt.Restore(links)
	return nil
}

// saveChildren is the newest links noted, encoded for the state; a
// follower calls it only when pt.Changes moved.
func saveChildren(pt *session.ParentTools) ([]ChildState, uint64) {
	links, changes := pt.Links(maxSavedChildren)
	out := make([]ChildState, len(links))
	for i, l := range links {
		c := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), l.Tool), c)
		out[i] = ChildState{Session: l.Child, Tool: c.Get("traceparent")}
	}
	return out, changes
}

// decodeTool is the span context of a ChildState's Tool, read as a
// traceparent header is.
func decodeTool(s string) (trace.SpanContext, bool) {
	if !strings.HasPrefix(s, "00-") {
		return trace.SpanContext{}, false // the version written
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": s})
	sc := trace.SpanContextFromContext(ctx).WithRemote(false)
	return sc, sc.IsValid()
}
