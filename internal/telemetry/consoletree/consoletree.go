// Package consoletree is a span exporter that draws each finished trace as
// an indented tree, for people reading stderr:
//
//	trace 4bf92f3577b34da6a3ce929d0e0e4736
//	invoke_agent pi  2.41s  OK  end_reason=stop
//	└─ chat gpt-4o  1.20s  model=gpt-4o in=812 out=96
//	   └─ execute_tool bash  15ms  ERROR: exit code 1  tool=bash
//
// Spans reach an exporter in batches, children before their parents, and a
// trace may straddle batches. The exporter therefore holds spans per trace
// and draws a subtree when its local root ends: a span whose parent is
// missing or lives in another process. Whatever is still held at Shutdown is
// drawn then. Siblings are ordered by start time, so the output does not
// depend on batching.
package consoletree

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Field is an attribute shown on a span's line, as Label=value.
type Field struct {
	Key   attribute.Key
	Label string
}

// DefaultFields are the attributes shown unless WithFields says otherwise.
var DefaultFields = []Field{
	{Key: vocab.GenAIRequestModelKey, Label: "model"},
	{Key: vocab.GenAIToolNameKey, Label: "tool"},
	{Key: vocab.GenAIUsageInputTokensKey, Label: "in"},
	{Key: vocab.GenAIUsageOutputTokensKey, Label: "out"},
	{Key: vocab.EndReasonKey, Label: "end_reason"},
	{Key: vocab.ErrorTypeKey, Label: "error.type"},
}

// maxValue bounds a shown attribute value; the tree is an overview.
const maxValue = 60

type config struct {
	color  bool
	fields []Field
}

// Option configures an Exporter.
type Option = option.Option[config]

// WithColor turns ANSI colours on or off. The default is off; see
// ColorFor.
func WithColor(on bool) Option {
	return option.Func[config](func(c *config) { c.color = on })
}

// ColorFor reports whether output to w should be coloured: only when w is a
// terminal and the user has not set NO_COLOR.
func ColorFor(w io.Writer, noColor bool) bool {
	if noColor {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Exporter draws traces on a writer. It is safe for concurrent use.
type Exporter struct {
	mu      sync.Mutex
	w       io.Writer
	color   bool
	fields  []Field
	held    map[trace.TraceID][]sdktrace.ReadOnlySpan
	stopped bool
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New returns an exporter drawing on w (normally stderr).
func New(w io.Writer, opts ...Option) *Exporter {
	c := option.Apply(config{fields: DefaultFields}, opts)
	return &Exporter{w: w, color: c.color, fields: c.fields, held: map[trace.TraceID][]sdktrace.ReadOnlySpan{}}
}

// ExportSpans holds spans and draws every subtree whose local root is among
// them.
func (e *Exporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	for _, s := range spans {
		tid := s.SpanContext().TraceID()
		e.held[tid] = append(e.held[tid], s)
	}
	var b strings.Builder
	for _, s := range spans {
		if !isLocalRoot(s) {
			continue
		}
		tid := s.SpanContext().TraceID()
		tree, rest := subtree(e.held[tid], s)
		if len(rest) == 0 {
			delete(e.held, tid)
		} else {
			e.held[tid] = rest
		}
		e.drawTrace(&b, tid, "", []sdktrace.ReadOnlySpan{s}, tree)
	}
	return e.write(b.String())
}

// Shutdown draws whatever is still held (spans whose local root never ended)
// and stops the exporter.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return nil
	}
	e.stopped = true
	type group struct {
		tid   trace.TraceID
		spans []sdktrace.ReadOnlySpan
		first time.Time
	}
	var groups []group
	for tid, spans := range e.held {
		first := slices.MinFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
		groups = append(groups, group{tid: tid, spans: spans, first: first.StartTime()})
	}
	clear(e.held)
	slices.SortFunc(groups, func(a, b group) int {
		return cmp.Or(a.first.Compare(b.first), bytes.Compare(a.tid[:], b.tid[:]))
	})
	var b strings.Builder
	for _, g := range groups {
		children := childrenOf(g.spans)
		var roots []sdktrace.ReadOnlySpan
		for _, s := range g.spans {
			if !has(g.spans, s.Parent().SpanID()) || !s.Parent().IsValid() {
				roots = append(roots, s)
			}
		}
		sortByStart(roots)
		e.drawTrace(&b, g.tid, " (incomplete: its root span did not end)", roots, children)
	}
	if err := e.write(b.String()); err != nil {
		return err
	}
	return ctx.Err()
}

func (e *Exporter) write(s string) error {
	if s == "" {
		return nil
	}
	_, err := io.WriteString(e.w, s)
	return err
}

// isLocalRoot reports whether s starts this process's part of its trace.
func isLocalRoot(s sdktrace.ReadOnlySpan) bool {
	p := s.Parent()
	return !p.IsValid() || p.IsRemote()
}

// has reports whether span id is among spans.
func has(spans []sdktrace.ReadOnlySpan, id trace.SpanID) bool {
	return slices.ContainsFunc(spans, func(s sdktrace.ReadOnlySpan) bool { return s.SpanContext().SpanID() == id })
}

// childrenOf maps each span id to its children among spans, by start time.
func childrenOf(spans []sdktrace.ReadOnlySpan) map[trace.SpanID][]sdktrace.ReadOnlySpan {
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		if isLocalRoot(s) {
			continue
		}
		pid := s.Parent().SpanID()
		children[pid] = append(children[pid], s)
	}
	for _, c := range children {
		sortByStart(c)
	}
	return children
}

// subtree splits held into root's descendants (as a child map) and the rest.
func subtree(held []sdktrace.ReadOnlySpan, root sdktrace.ReadOnlySpan) (map[trace.SpanID][]sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
	children := childrenOf(held)
	in := map[trace.SpanID]bool{root.SpanContext().SpanID(): true}
	stack := []trace.SpanID{root.SpanContext().SpanID()}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range children[id] {
			cid := c.SpanContext().SpanID()
			if !in[cid] {
				in[cid] = true
				stack = append(stack, cid)
			}
		}
	}
	var rest []sdktrace.ReadOnlySpan
	for _, s := range held {
		if !in[s.SpanContext().SpanID()] {
			rest = append(rest, s)
		}
	}
	return children, rest
}

func sortByStart(spans []sdktrace.ReadOnlySpan) {
	slices.SortStableFunc(spans, func(a, b sdktrace.ReadOnlySpan) int {
		ida, idb := a.SpanContext().SpanID(), b.SpanContext().SpanID()
		return cmp.Or(a.StartTime().Compare(b.StartTime()), strings.Compare(a.Name(), b.Name()), bytes.Compare(ida[:], idb[:]))
	})
}

// ANSI styles, used only when colour is on.
const (
	dim      = "\x1b[2m"
	bold     = "\x1b[1m"
	red      = "\x1b[31m"
	green    = "\x1b[32m"
	cyan     = "\x1b[36m"
	styleOff = "\x1b[0m"
)

func (e *Exporter) paint(style, s string) string {
	if !e.color || s == "" {
		return s
	}
	return style + s + styleOff
}

func (e *Exporter) drawTrace(b *strings.Builder, tid trace.TraceID, note string, roots []sdktrace.ReadOnlySpan, children map[trace.SpanID][]sdktrace.ReadOnlySpan) {
	b.WriteString(e.paint(cyan, "trace "+tid.String()+note))
	b.WriteByte('\n')
	seen := map[trace.SpanID]bool{}
	for _, r := range roots {
		e.drawSpan(b, r, "", "", children, seen)
	}
}

// drawSpan writes s after lead, then its children with indent. seen guards
// against a malformed parent cycle.
func (e *Exporter) drawSpan(b *strings.Builder, s sdktrace.ReadOnlySpan, lead, indent string, children map[trace.SpanID][]sdktrace.ReadOnlySpan, seen map[trace.SpanID]bool) {
	id := s.SpanContext().SpanID()
	if seen[id] {
		return
	}
	seen[id] = true
	b.WriteString(e.paint(dim, lead))
	b.WriteString(e.line(s))
	b.WriteByte('\n')
	kids := children[id]
	for i, c := range kids {
		branch, next := "├─ ", "│  "
		if i == len(kids)-1 {
			branch, next = "└─ ", "   "
		}
		e.drawSpan(b, c, indent+branch, indent+next, children, seen)
	}
}

func (e *Exporter) line(s sdktrace.ReadOnlySpan) string {
	parts := []string{
		e.paint(bold, clean(s.Name())),
		e.paint(dim, formatDuration(s.EndTime().Sub(s.StartTime()))),
	}
	switch st := s.Status(); st.Code {
	case codes.Ok:
		parts = append(parts, e.paint(green, "OK"))
	case codes.Error:
		msg := "ERROR"
		if st.Description != "" {
			msg += ": " + clip(clean(st.Description))
		}
		parts = append(parts, e.paint(red, msg))
	}
	if kv := e.attrs(s); kv != "" {
		parts = append(parts, kv)
	}
	return strings.Join(parts, "  ")
}

func (e *Exporter) attrs(s sdktrace.ReadOnlySpan) string {
	if len(e.fields) == 0 {
		return ""
	}
	values := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		values[kv.Key] = kv.Value
	}
	var out []string
	for _, f := range e.fields {
		v, ok := values[f.Key]
		if !ok {
			continue
		}
		out = append(out, e.paint(dim, f.Label+"=")+formatValue(v))
	}
	return strings.Join(out, " ")
}

func formatValue(v attribute.Value) string {
	s := v.String()
	if v.Type() == attribute.STRING {
		s = clip(s)
		if s == "" || strings.ContainsFunc(s, func(r rune) bool {
			return unicode.IsSpace(r) || !unicode.IsPrint(r) || r == '"' || r == '='
		}) {
			return strconv.Quote(s)
		}
		return s
	}
	return clip(clean(s))
}

// clean keeps a value on one line.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

func clip(s string) string {
	if len([]rune(s)) <= maxValue {
		return s
	}
	return string([]rune(s)[:maxValue-1]) + "…"
}

// formatDuration gives two or three significant digits, enough to compare
// spans at a glance.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
