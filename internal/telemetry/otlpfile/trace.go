// Package otlpfile writes spans and metrics as OTLP/JSON, one export request
// per line, the way the OpenTelemetry Collector's file exporter does. Any
// tool that reads the Collector's files (or an OTLP/JSON receiver) reads
// these.
//
// OTLP/JSON differs from plain protobuf JSON in one place that matters here:
// trace and span ids are lowercase hex strings, not base64. Enum values are
// written as integers and 64-bit integers as strings, both of which OTLP/JSON
// receivers accept.
package otlpfile

import (
	"context"
	"io"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TraceExporter is an sdktrace.SpanExporter that writes each batch as one
// ExportTraceServiceRequest line.
type TraceExporter struct {
	lineWriter
	bufMu sync.Mutex
	buf   []byte
}

var _ sdktrace.SpanExporter = (*TraceExporter)(nil)

// NewTraceExporter returns an exporter writing to w. It never closes w.
func NewTraceExporter(w io.Writer) *TraceExporter {
	return &TraceExporter{lineWriter: lineWriter{w: w}}
}

// ExportSpans writes spans as one line. The line goes out in a single Write,
// so processes appending to the same file do not interleave their lines.
func (e *TraceExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	// The line is written before ExportSpans returns, so its buffer serves
	// the next batch: a sync.Pool would lose it at every GC, and a backfill
	// collects often.
	e.bufMu.Lock()
	defer e.bufMu.Unlock()
	err := e.export(ctx, func() ([]byte, error) {
		line, err := appendTraces(e.buf[:0], spans)
		e.buf = line
		return line, err
	})
	// A batch of captured content can make a line of many megabytes; keep
	// only the usual sizes.
	if cap(e.buf) > maxKeptLine {
		e.buf = nil
	}
	return err
}

const maxKeptLine = 4 << 20

// lineWriter writes whole lines, each in a single Write, until it is shut
// down; the three exporters are one.
type lineWriter struct {
	mu      sync.Mutex
	w       io.Writer
	stopped bool
}

func (l *lineWriter) writeLine(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return nil
	}
	_, err := l.w.Write(line)
	return err
}

// export writes the line that marshal makes, unless ctx has ended first;
// marshal returns no line when there is nothing to write.
func (l *lineWriter) export(ctx context.Context, marshal func() ([]byte, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	line, err := marshal()
	if err != nil || line == nil {
		return err
	}
	return l.writeLine(line)
}

// Shutdown stops further writes.
func (l *lineWriter) Shutdown(context.Context) error {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	return nil
}

// TraceRequest converts spans to an export request, grouped by resource and
// then by instrumentation scope, each group in order of first appearance.
func TraceRequest(spans []sdktrace.ReadOnlySpan) *coltracepb.ExportTraceServiceRequest {
	req := &coltracepb.ExportTraceServiceRequest{}
	for _, rg := range group(len(spans), func(i int) (*resource.Resource, instrumentation.Scope) {
		return spans[i].Resource(), spans[i].InstrumentationScope()
	}) {
		rs := &tracepb.ResourceSpans{Resource: resourceProto(rg.res), SchemaUrl: rg.res.SchemaURL()}
		for _, sg := range rg.scopes {
			ss := &tracepb.ScopeSpans{Scope: scopeProto(sg.scope), SchemaUrl: sg.scope.SchemaURL}
			for _, i := range sg.items {
				ss.Spans = append(ss.Spans, spanProto(spans[i]))
			}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		req.ResourceSpans = append(req.ResourceSpans, rs)
	}
	return req
}

// resourceGroup and scopeGroup are the nesting of every OTLP request:
// items (by index) by instrumentation scope, by resource.
type resourceGroup struct {
	res    *resource.Resource
	scopes []*scopeGroup
}

type scopeGroup struct {
	scope instrumentation.Scope
	items []int
}

// group sorts n items, whose resource and scope of tells, into groups,
// each in order of first appearance.
func group(n int, of func(i int) (*resource.Resource, instrumentation.Scope)) []*resourceGroup {
	type scopeKey struct {
		res   resourceKey
		scope scopeID
	}
	var out []*resourceGroup
	resources := map[resourceKey]*resourceGroup{}
	scopes := map[scopeKey]*scopeGroup{}
	for i := range n {
		res, sc := of(i)
		rk := resourceKey{attrs: res.Equivalent(), schema: res.SchemaURL()}
		rg, ok := resources[rk]
		if !ok {
			rg = &resourceGroup{res: res}
			resources[rk] = rg
			out = append(out, rg)
		}
		sk := scopeKey{rk, scopeID{sc.Name, sc.Version, sc.SchemaURL, sc.Attributes.Equivalent()}}
		sg, ok := scopes[sk]
		if !ok {
			sg = &scopeGroup{scope: sc}
			scopes[sk] = sg
			rg.scopes = append(rg.scopes, sg)
		}
		sg.items = append(sg.items, i)
	}
	return out
}

type resourceKey struct {
	attrs  attribute.Distinct
	schema string
}

type scopeID struct {
	name, version, schema string
	attrs                 attribute.Distinct
}

func resourceProto(r *resource.Resource) *resourcepb.Resource {
	return &resourcepb.Resource{Attributes: attributesProto(r.Attributes())}
}

func scopeProto(s instrumentation.Scope) *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{
		Name:       s.Name,
		Version:    s.Version,
		Attributes: attributesProto(s.Attributes.ToSlice()),
	}
}

// The bits of Span.flags and Span.Link.flags above the W3C trace flags.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func contextFlags(flags trace.TraceFlags, remote bool) uint32 {
	f := uint32(flags) | flagHasIsRemote
	if remote {
		f |= flagIsRemote
	}
	return f
}

func spanProto(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  contextFlags(sc.TraceFlags(), s.Parent().IsRemote()),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             attributesProto(s.Attributes()),
		DroppedAttributesCount: uint32(max(s.DroppedAttributes(), 0)),
		DroppedEventsCount:     uint32(max(s.DroppedEvents(), 0)),
		DroppedLinksCount:      uint32(max(s.DroppedLinks(), 0)),
		Status:                 statusProto(s.Status()),
	}
	if parent := s.Parent(); parent.SpanID().IsValid() {
		psid := parent.SpanID()
		p.ParentSpanId = psid[:]
	}
	for _, ev := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{
			TimeUnixNano:           unixNano(ev.Time),
			Name:                   ev.Name,
			Attributes:             attributesProto(ev.Attributes),
			DroppedAttributesCount: uint32(max(ev.DroppedAttributeCount, 0)),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             attributesProto(l.Attributes),
			DroppedAttributesCount: uint32(max(l.DroppedAttributeCount, 0)),
			Flags:                  contextFlags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()),
		})
	}
	return p
}

func statusProto(s sdktrace.Status) *tracepb.Status {
	// OpenTelemetry Go and OTLP number the codes differently.
	switch s.Code {
	case codes.Error:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: s.Description}
	case codes.Ok:
		return &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	}
	return &tracepb.Status{}
}
