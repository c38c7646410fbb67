package spantree

import (
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Recorder is an SDK TracerProvider that keeps every span it starts and
// ends, for the trees.
type Recorder struct {
	*sdktrace.TracerProvider
	Spans *tracetest.SpanRecorder
}

// NewRecorder returns a Recorder.
func NewRecorder() *Recorder {
	rec := tracetest.NewSpanRecorder()
	return &Recorder{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), Spans: rec}
}

// Forest is Recorded over what r kept.
func (r *Recorder) Forest(tb testing.TB) []*Node {
	tb.Helper()
	return Recorded(tb, r.Spans)
}

// Recorded builds the forest of the spans rec saw end, siblings that
// start together in the order they began. A span that began and never
// ended fails tb: every test reads its tree once the mapper has closed.
func Recorded(tb testing.TB, rec *tracetest.SpanRecorder) []*Node {
	tb.Helper()
	began := map[string]int{}
	for i, s := range rec.Started() {
		began[s.SpanContext().SpanID().String()] = i
		if s.EndTime().IsZero() {
			tb.Errorf("span %s never ended", s.Name())
		}
	}
	ended := rec.Ended()
	sort.SliceStable(ended, func(i, j int) bool {
		return began[ended[i].SpanContext().SpanID().String()] < began[ended[j].SpanContext().SpanID().String()]
	})
	return FromSDK(tb, ended)
}

// FromSDK builds the forest of SDK spans, ties in start time kept in the
// order given.
func FromSDK(tb testing.TB, spans []sdktrace.ReadOnlySpan) []*Node {
	tb.Helper()
	nodes := make([]*Node, 0, len(spans))
	for _, s := range spans {
		n := &Node{
			Name:    s.Name(),
			TraceID: s.SpanContext().TraceID().String(),
			SpanID:  s.SpanContext().SpanID().String(),
			Kind:    s.SpanKind().String(),
			Status:  Status{Code: sdkStatus(s.Status().Code), Message: s.Status().Description},
			Start:   s.StartTime(),
			End:     s.EndTime(),
			Attrs:   sdkAttrs(s.Attributes()),
		}
		if p := s.Parent(); p.IsValid() {
			n.ParentID = p.SpanID().String()
		}
		for _, e := range s.Events() {
			n.Events = append(n.Events, Event{Name: e.Name, Time: e.Time, Attrs: sdkAttrs(e.Attributes)})
		}
		for _, l := range s.Links() {
			n.Links = append(n.Links, Link{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String()})
		}
		nodes = append(nodes, n)
	}
	return Forest(tb, nodes)
}

// sdkStatus spells a status code as OTLP JSON and Jaeger do.
func sdkStatus(c codes.Code) string { return strings.ToLower(c.String()) }

func sdkAttrs(kvs []attribute.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}
