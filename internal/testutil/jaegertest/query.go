package jaegertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// Trace fetches one trace by its hex id from /api/v3/traces/{id}.
// It returns ErrNotFound while Jaeger has not stored it.
func (j *Jaeger) Trace(ctx context.Context, traceID string) (*Trace, error) {
	var doc otlpDoc
	if err := j.get(ctx, "/api/v3/traces/"+url.PathEscape(traceID), nil, &doc); err != nil {
		return nil, err
	}
	traces := doc.traces()
	if len(traces) == 0 {
		return nil, ErrNotFound
	}
	return traces[0], nil
}

// FindTraces lists up to n traces of service that started between min and
// max, from /api/v3/traces.
func (j *Jaeger) FindTraces(ctx context.Context, service string, min, max time.Time, n int) ([]*Trace, error) {
	q := url.Values{}
	q.Set("query.service_name", service)
	q.Set("query.start_time_min", min.UTC().Format(time.RFC3339Nano))
	q.Set("query.start_time_max", max.UTC().Format(time.RFC3339Nano))
	q.Set("query.num_traces", strconv.Itoa(n)) // required: without it Jaeger answers 500
	var doc otlpDoc
	if err := j.get(ctx, "/api/v3/traces", q, &doc); err != nil {
		if err == ErrNotFound {
			return nil, nil
		}
		return nil, err
	}
	return doc.traces(), nil
}

// Services lists the service names Jaeger knows.
func (j *Jaeger) Services(ctx context.Context) ([]string, error) {
	var out struct {
		Services []string `json:"services"`
	}
	if err := j.get(ctx, "/api/v3/services", nil, &out); err != nil {
		return nil, err
	}
	return out.Services, nil
}

// SpansByTrace returns every span j holds, by trace id, over all its
// services; failures end the test. The search window starts in 2000 (a
// replay keeps its capture's timestamps) and the trace count is far above
// what a test sends.
func (j *Jaeger) SpansByTrace(tb testing.TB) map[string][]*Span {
	tb.Helper()
	ctx := context.Background()
	svcs, err := j.Services(ctx)
	if err != nil {
		tb.Fatalf("%s: services: %v", j.Name, err)
	}
	out := map[string][]*Span{}
	for _, svc := range svcs {
		traces, err := j.FindTraces(ctx, svc, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), time.Now().Add(time.Minute), 100000)
		if err != nil {
			tb.Fatalf("%s: traces of %s: %v", j.Name, svc, err)
		}
		for _, t := range traces {
			out[t.ID] = append(out[t.ID], t.Spans...)
		}
	}
	return out
}

func (j *Jaeger) get(ctx context.Context, path string, q url.Values, v any) error {
	u := j.QueryURL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusNotFound {
		return ErrNotFound
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("jaegertest: GET %s: %s: %s", u, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("jaegertest: GET %s: decode: %w", u, err)
	}
	return nil
}

// WaitTrace polls until trace traceID has at least spans spans, failing tb
// when it does not within the poll deadline (30s, or ctx's).
func (j *Jaeger) WaitTrace(tb testing.TB, ctx context.Context, traceID string, spans int) *Trace {
	tb.Helper()
	ctx, cancel := pollContext(ctx)
	defer cancel()
	var last *Trace
	var lastErr error
	for {
		t, err := j.Trace(ctx, traceID)
		if err == nil && len(t.Spans) >= spans {
			return t
		}
		if err == nil {
			last = t
		}
		lastErr = err
		select {
		case <-ctx.Done():
			got := 0
			if last != nil {
				got = len(last.Spans)
			}
			tb.Fatalf("jaegertest: trace %s has %d spans, want >= %d (last error: %v)", traceID, got, spans, lastErr)
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitService polls until service's traces started since min hold at least
// spans spans in total, and returns them (up to 100 traces).
func (j *Jaeger) WaitService(tb testing.TB, ctx context.Context, service string, min time.Time, spans int) []*Trace {
	tb.Helper()
	ctx, cancel := pollContext(ctx)
	defer cancel()
	var got int
	var lastErr error
	for {
		ts, err := j.FindTraces(ctx, service, min, time.Now().Add(time.Minute), 100)
		got = 0
		for _, t := range ts {
			got += len(t.Spans)
		}
		if err == nil && got >= spans {
			return ts
		}
		lastErr = err
		select {
		case <-ctx.Done():
			tb.Fatalf("jaegertest: service %q has %d spans, want >= %d (last error: %v)", service, got, spans, lastErr)
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Trace is one trace as Jaeger stored it.
type Trace struct {
	ID    string
	Spans []*Span // sorted by start time, then name
}

// Span is a stored span with its attributes decoded to Go values: string,
// int64, float64, bool, []any, map[string]any or []byte.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Kind                      string // "internal", "server", "client", "producer", "consumer", "unspecified"
	Status                    Status
	Start, End                time.Time
	Attrs                     map[string]any
	Events                    []Event
	Links                     []Link
	Resource                  map[string]any
	Scope                     string
	Parent                    *Span
	Children                  []*Span
}

// Status is a span status: Code is "unset", "ok" or "error".
type Status = spantree.Status

// Link is a span link.
type Link struct {
	TraceID, SpanID string
	Attrs           map[string]any
}

// Event is a span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs map[string]any
}

// Roots are the spans whose parent is not in the trace.
func (t *Trace) Roots() []*Span {
	var out []*Span
	for _, s := range t.Spans {
		if s.Parent == nil {
			out = append(out, s)
		}
	}
	return out
}

// Named returns the spans called name, in start order.
func (t *Trace) Named(name string) []*Span { return named(t.Spans, name) }

// Service is the service.name of the trace's first span.
func (t *Trace) Service() string {
	if len(t.Spans) == 0 {
		return ""
	}
	s, _ := t.Spans[0].Resource["service.name"].(string)
	return s
}

// Str returns a string attribute ("" when absent or not a string).
func (s *Span) Str(key string) string {
	v, _ := s.Attrs[key].(string)
	return v
}

// Int returns an integer attribute.
func (s *Span) Int(key string) (int64, bool) {
	v, ok := s.Attrs[key].(int64)
	return v, ok
}

// Float returns a double attribute.
func (s *Span) Float(key string) (float64, bool) {
	v, ok := s.Attrs[key].(float64)
	return v, ok
}

// Bool returns a boolean attribute.
func (s *Span) Bool(key string) (bool, bool) {
	v, ok := s.Attrs[key].(bool)
	return v, ok
}

// Has reports whether the attribute is set.
func (s *Span) Has(key string) bool {
	_, ok := s.Attrs[key]
	return ok
}

// Child returns the children called name, in start order.
func (s *Span) Child(name string) []*Span { return named(s.Children, name) }

// named keeps the spans called name, in their order.
func named(spans []*Span, name string) []*Span {
	var out []*Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Tree renders the span tree, one "name [status]" line per span indented by
// depth; handy in failure messages.
func (t *Trace) Tree() string {
	var b []byte
	var walk func(s *Span, depth int)
	walk = func(s *Span, depth int) {
		for range depth {
			b = append(b, "  "...)
		}
		b = append(b, s.Name...)
		if s.Status.Code == "error" {
			b = append(b, " [error: "...)
			b = append(b, s.Status.Message...)
			b = append(b, ']')
		}
		b = append(b, '\n')
		for _, c := range s.Children {
			walk(c, depth+1)
		}
	}
	for _, r := range t.Roots() {
		walk(r, 0)
	}
	return string(b)
}

// The OTLP JSON Jaeger's v3 API answers with, wrapped in "result".

type otlpDoc struct {
	Result struct {
		ResourceSpans []resourceSpans `json:"resourceSpans"`
	} `json:"result"`
	ResourceSpans []resourceSpans `json:"resourceSpans"`
}

type resourceSpans struct {
	Resource struct {
		Attributes []keyValue `json:"attributes"`
	} `json:"resource"`
	ScopeSpans []struct {
		Scope struct {
			Name string `json:"name"`
		} `json:"scope"`
		Spans []otlpSpan `json:"spans"`
	} `json:"scopeSpans"`
}

type otlpSpan struct {
	TraceID           string          `json:"traceId"`
	SpanID            string          `json:"spanId"`
	ParentSpanID      string          `json:"parentSpanId"`
	Name              string          `json:"name"`
	Kind              json.RawMessage `json:"kind"`
	StartTimeUnixNano json.RawMessage `json:"startTimeUnixNano"`
	EndTimeUnixNano   json.RawMessage `json:"endTimeUnixNano"`
	Attributes        []keyValue      `json:"attributes"`
	Events            []struct {
		Name         string          `json:"name"`
		TimeUnixNano json.RawMessage `json:"timeUnixNano"`
		Attributes   []keyValue      `json:"attributes"`
	} `json:"events"`
	Links []struct {
		TraceID    string     `json:"traceId"`
		SpanID     string     `json:"spanId"`
		Attributes []keyValue `json:"attributes"`
	} `json:"links"`
	Status struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	} `json:"status"`
}

type keyValue struct {
	Key   string   `json:"key"`
	Value anyValue `json:"value"`
}

type anyValue struct {
	StringValue *string         `json:"stringValue"`
	BoolValue   *bool           `json:"boolValue"`
	IntValue    json.RawMessage `json:"intValue"`
	DoubleValue json.RawMessage `json:"doubleValue"`
	BytesValue  *string         `json:"bytesValue"`
	ArrayValue  *struct {
		Values []anyValue `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []keyValue `json:"values"`
	} `json:"kvlistValue"`
}

func (v anyValue) decode() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.IntValue != nil:
		n, _ := strconv.ParseInt(unquote(v.IntValue), 10, 64)
		return n
	case v.DoubleValue != nil:
		f, _ := strconv.ParseFloat(unquote(v.DoubleValue), 64)
		return f
	case v.BytesValue != nil:
		return []byte(*v.BytesValue)
	case v.ArrayValue != nil:
		out := make([]any, 0, len(v.ArrayValue.Values))
		for _, e := range v.ArrayValue.Values {
			out = append(out, e.decode())
		}
		return out
	case v.KvlistValue != nil:
		return attrs(v.KvlistValue.Values)
	}
	return nil
}

func attrs(kvs []keyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		out[kv.Key] = kv.Value.decode()
	}
	return out
}

// unquote turns a JSON number or a JSON string holding a number into its
// text: protobuf JSON writes 64-bit integers as strings.
func unquote(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func unixNano(raw json.RawMessage) time.Time {
	if raw == nil {
		return time.Time{}
	}
	n, err := strconv.ParseInt(unquote(raw), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, n)
}

var kinds = map[string]string{
	"0": "unspecified", "1": "internal", "2": "server", "3": "client", "4": "producer", "5": "consumer",
	"SPAN_KIND_UNSPECIFIED": "unspecified", "SPAN_KIND_INTERNAL": "internal", "SPAN_KIND_SERVER": "server",
	"SPAN_KIND_CLIENT": "client", "SPAN_KIND_PRODUCER": "producer", "SPAN_KIND_CONSUMER": "consumer",
}

var statusCodes = map[string]string{
	"": "unset", "0": "unset", "1": "ok", "2": "error",
	"STATUS_CODE_UNSET": "unset", "STATUS_CODE_OK": "ok", "STATUS_CODE_ERROR": "error",
}

func enum(raw json.RawMessage, table map[string]string) string {
	if raw == nil {
		return table[""]
	}
	k := unquote(raw)
	if v, ok := table[k]; ok {
		return v
	}
	return k
}

// traces groups the document's spans by trace and links parents.
func (d otlpDoc) traces() []*Trace {
	rss := d.Result.ResourceSpans
	if len(rss) == 0 {
		rss = d.ResourceSpans
	}
	byID := map[string]*Trace{}
	var order []string
	for _, rs := range rss {
		res := attrs(rs.Resource.Attributes)
		for _, ss := range rs.ScopeSpans {
			for _, os := range ss.Spans {
				s := &Span{
					TraceID: os.TraceID, SpanID: os.SpanID, ParentID: os.ParentSpanID, Name: os.Name,
					Kind:     enum(os.Kind, kinds),
					Status:   Status{Code: enum(os.Status.Code, statusCodes), Message: os.Status.Message},
					Start:    unixNano(os.StartTimeUnixNano),
					End:      unixNano(os.EndTimeUnixNano),
					Attrs:    attrs(os.Attributes),
					Resource: res,
					Scope:    ss.Scope.Name,
				}
				if s.Kind == "" {
					s.Kind = "unspecified"
				}
				for _, e := range os.Events {
					s.Events = append(s.Events, Event{Name: e.Name, Time: unixNano(e.TimeUnixNano), Attrs: attrs(e.Attributes)})
				}
				for _, l := range os.Links {
					s.Links = append(s.Links, Link{TraceID: l.TraceID, SpanID: l.SpanID, Attrs: attrs(l.Attributes)})
				}
				t := byID[s.TraceID]
				if t == nil {
					t = &Trace{ID: s.TraceID}
					byID[s.TraceID] = t
					order = append(order, s.TraceID)
				}
				t.Spans = append(t.Spans, s)
			}
		}
	}
	out := make([]*Trace, 0, len(order))
	for _, id := range order {
		t := byID[id]
		sort.SliceStable(t.Spans, func(a, b int) bool {
			if !t.Spans[a].Start.Equal(t.Spans[b].Start) {
				return t.Spans[a].Start.Before(t.Spans[b].Start)
			}
			return t.Spans[a].Name < t.Spans[b].Name
		})
		spans := map[string]*Span{}
		for _, s := range t.Spans {
			spans[s.SpanID] = s
		}
		for _, s := range t.Spans {
			if p := spans[s.ParentID]; p != nil && s.ParentID != "" {
				s.Parent = p
				p.Children = append(p.Children, s)
			}
		}
		out = append(out, t)
	}
	return out
}
