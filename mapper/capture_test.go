package mapper_test

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/stream/framing"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/mapper"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// node is one recorded span with its children, for tree assertions.
type node struct {
	s        sdktrace.ReadOnlySpan
	children []*node
	seq      int // start order, to order spans that share a timestamp
}

func (n *node) name() string { return n.s.Name() }

func (n *node) attr(key string) (attribute.Value, bool) {
	for _, kv := range n.s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func (n *node) str(t *testing.T, key string) string {
	t.Helper()
	v, ok := n.attr(key)
	if !ok {
		t.Fatalf("%s: no attribute %s", n.name(), key)
	}
	return v.Emit()
}

// find returns the descendants (n included) with the given name.
func (n *node) find(name string) []*node {
	var out []*node
	if n.name() == name {
		out = append(out, n)
	}
	for _, c := range n.children {
		out = append(out, c.find(name)...)
	}
	return out
}

func (n *node) childNames() []string {
	var names []string
	for _, c := range n.children {
		names = append(names, c.name())
	}
	return names
}

// shape renders the tree as indented names with error marks, for diffs.
func (n *node) shape() string {
	var b strings.Builder
	var walk func(*node, int)
	walk = func(n *node, depth int) {
		mark := ""
		if n.s.Status().Code == codes.Error {
			mark = " !"
		}
		fmt.Fprintf(&b, "%s%s%s\n", strings.Repeat("  ", depth), n.name(), mark)
		for _, c := range n.children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

// roots builds the span forest, children ordered by start time.
func roots(t *testing.T, spans []sdktrace.ReadOnlySpan, started []sdktrace.ReadWriteSpan) []*node {
	t.Helper()
	seq := map[string]int{}
	for i, s := range started {
		seq[s.SpanContext().SpanID().String()] = i
	}
	byID := map[string]*node{}
	for _, s := range spans {
		id := s.SpanContext().SpanID().String()
		byID[id] = &node{s: s, seq: seq[id]}
	}
	var out []*node
	for _, n := range byID {
		p := n.s.Parent()
		if parent, ok := byID[p.SpanID().String()]; ok && p.IsValid() {
			if p.TraceID() != n.s.SpanContext().TraceID() {
				t.Fatalf("%s: parent in another trace", n.name())
			}
			parent.children = append(parent.children, n)
		} else {
			out = append(out, n)
		}
		if n.s.EndTime().Before(n.s.StartTime()) {
			t.Errorf("%s ends before it starts", n.name())
		}
	}
	order := func(ns []*node) {
		sort.SliceStable(ns, func(i, j int) bool {
			a, b := ns[i].s, ns[j].s
			if !a.StartTime().Equal(b.StartTime()) {
				return a.StartTime().Before(b.StartTime())
			}
			return ns[i].seq < ns[j].seq
		})
	}
	var sortAll func([]*node)
	sortAll = func(ns []*node) {
		order(ns)
		for _, n := range ns {
			sortAll(n.children)
		}
	}
	sortAll(out)
	return out
}

// replay maps a stream through a recorder, the way `pi-otel replay` does.
func replay(t *testing.T, stream []byte, end *mapper.Ending, opts ...mapper.Option) ([]*node, *mapper.Mapper, ingest.Stats) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	m := mapper.New(tp, opts...)
	clock := ingest.NewStreamClock(time.Unix(1_700_000_000, 0))
	sink := ingest.New(m, ingest.WithClock(clock))
	r := framing.NewReader(bytes.NewReader(stream))
	for {
		b, err := r.Next()
		if err != nil {
			break
		}
		sink.Record(b)
	}
	if end == nil {
		end = &mapper.Ending{Reason: mapper.EndEOF}
	}
	m.Close(*end, clock.Now())
	for _, s := range rec.Started() {
		if s.(sdktrace.ReadWriteSpan).EndTime().IsZero() {
			t.Errorf("span %s never ended", s.Name())
		}
	}
	return roots(t, rec.Ended(), rec.Started()), m, sink.Stats()
}

func capture(t *testing.T, version, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(repo.Captures(version, name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
