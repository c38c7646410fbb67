package session

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/pi-otel/pi-otel/internal/testutil/capture"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/mapper"
)

// node is one recorded span and its children.
type node struct {
	s        sdktrace.ReadOnlySpan
	children []*node
	seq      int
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

func (n *node) str(key string) string {
	v, ok := n.attr(key)
	if !ok {
		return "<none>"
	}
	return v.String()
}

func (n *node) find(name string) []*node {
	var out []*node
	if n.name() == name || strings.HasPrefix(n.name(), name+" ") {
		out = append(out, n)
	}
	for _, c := range n.children {
		out = append(out, c.find(name)...)
	}
	return out
}

// shape renders the tree as indented names, "!" marking error status.
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

func forest(t *testing.T, rec *tracetest.SpanRecorder) []*node {
	t.Helper()
	for _, s := range rec.Started() {
		if s.EndTime().IsZero() {
			t.Errorf("span %s never ended", s.Name())
		}
	}
	seq := map[string]int{}
	for i, s := range rec.Started() {
		seq[s.SpanContext().SpanID().String()] = i
	}
	byID := map[string]*node{}
	for _, s := range rec.Ended() {
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
	var sortAll func([]*node)
	sortAll = func(ns []*node) {
		sort.SliceStable(ns, func(i, j int) bool {
			a, b := ns[i].s, ns[j].s
			if !a.StartTime().Equal(b.StartTime()) {
				return a.StartTime().Before(b.StartTime())
			}
			return ns[i].seq < ns[j].seq
		})
		for _, n := range ns {
			sortAll(n.children)
		}
	}
	sortAll(out)
	return out
}

// traced is the outcome of tracing one input.
type traced struct {
	roots  []*node
	tracer *FileMapper
}

// traceBytes feeds a session file to a FileMapper, line by line, and closes it.
func traceBytes(t *testing.T, b []byte, cfg Config) traced {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	ids := &IDs{}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(ids))
	cfg.TracerProvider, cfg.IDs = tp, ids
	tr := New(cfg)
	feed(tr, b)
	tr.Close(mapper.Ending{Reason: mapper.EndEOF})
	return traced{roots: forest(t, rec), tracer: tr}
}

// feed gives b to tr line by line; a last line without LF is held back,
// as a follower would.
func feed(tr *FileMapper, b []byte) {
	off := int64(0)
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return
		}
		tr.Line(off, b[:i])
		off += int64(i) + 1
		b = b[i+1:]
	}
}

// traceStream maps an event stream as `pi-otel replay` does.
func traceStream(t *testing.T, stream []byte) []*node {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	m := mapper.New(tp, mapper.WithInexactTimes())
	clock := ingest.NewStreamClock(time.Unix(1_700_000_000, 0))
	sink := ingest.New(m, ingest.WithClock(clock))
	r := framing.NewReader(bytes.NewReader(stream))
	var head [][]byte
	anchored := false
	for {
		b, err := r.Next()
		if err != nil {
			break
		}
		if !anchored {
			head = append(head, bytes.Clone(b))
			if at, ok := ingest.Anchor(head[len(head)-1:]); ok {
				clock.Reset(at)
				anchored = true
				for _, h := range head {
					sink.Record(h)
				}
			}
			continue
		}
		sink.Record(b)
	}
	if !anchored {
		for _, h := range head {
			sink.Record(h)
		}
	}
	m.Close(mapper.Ending{Reason: mapper.EndEOF}, clock.Now())
	return forest(t, rec)
}

func sessionsDir(version string) string {
	return repo.Path(filepath.Join("testdata", "sessions", version))
}

// readCapture reads file (NAME.jsonl, NAME.stream.jsonl) of a version's
// session captures.
func readCapture(t *testing.T, version, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sessionsDir(version), file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// captured lists the session captures of a version.
func captured(t *testing.T, version string) []string {
	t.Helper()
	names, err := capture.SessionNames(sessionsDir(version))
	if err != nil || len(names) == 0 {
		t.Fatalf("no session captures for %s: %v", version, err)
	}
	return names
}
