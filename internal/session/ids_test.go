package session

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/spanid"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// onlyKey traces the one run keyed key.
func onlyKey(key string) func(*Run) {
	return func(r *Run) {
		if r.Key == key {
			r.Trace(false)
		}
	}
}

// spanSet is every span's name, trace, id and parent, sorted.
func spanSet(rec *tracetest.SpanRecorder) []string {
	var out []string
	for _, s := range rec.Ended() {
		out = append(out, fmt.Sprintf("%s %s %s %s", s.Name(), s.SpanContext().TraceID(), s.SpanContext().SpanID(), s.Parent().SpanID()))
	}
	slices.Sort(out)
	return out
}

// Ids depend on the runs' keys, not on the order spans are created in:
// each run of a file traced on its own, in a shuffled order and all at
// once on one TracerProvider (no lock serialises them), gives the spans
// tracing the whole file in order gave.
func TestIDsDependOnKeysNotOrder(t *testing.T) {
	f := newFile(nil)
	var keys []string
	for i := range 8 {
		keys = append(keys, "sess-1/"+f.user(fmt.Sprint("prompt ", i)))
		f.assistant("toolUse", usage{10, 1}, "bash:a", "read:b")
		f.result("a", false)
		f.result("b", i%2 == 0)
		f.assistant("toolUse", usage{10, 1}, "bash:a") // a call id given again
		f.result("a", false)
		f.assistant("stop", usage{20, 2})
	}
	b := f.bytes()
	whole, _ := record(b, Config{}, feed)
	want := spanSet(whole)
	if len(want) < 8*8 {
		t.Fatalf("%d spans", len(want))
	}

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(spanid.NewGenerator(nil)))
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() {
			tr := New(Config{TracerProvider: tp, Runs: onlyKey(k)})
			feed(tr, b)
			tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
		})
	}
	wg.Wait()
	if got := spanSet(rec); !slices.Equal(got, want) {
		t.Errorf("runs traced apart, in the order %v:\n%s\nwant:\n%s", keys, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	seen := map[string]bool{}
	for _, s := range want {
		id := s[len(s)-2*16-1-16 : len(s)-17]
		if seen[id] {
			t.Errorf("span id %s twice", id)
		}
		seen[id] = true
	}
}

// FileMapper.ToolContext names a tool's span as soon as the assistant
// message that calls it is read, long before the run is traced, and the
// span gets it.
func TestFileMapperToolContext(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	f.assistant("toolUse", usage{10, 1}, "bash:c1")
	called := len(f.lines)
	f.result("c1", false)
	f.assistant("stop", usage{20, 2})
	lines := bytes.SplitAfter(f.bytes(), []byte("\n"))

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithIDGenerator(spanid.NewGenerator(nil)))
	tr := New(Config{TracerProvider: tp})
	var off int64
	for i, l := range lines[:len(lines)-1] {
		if i == called {
			break
		}
		tr.Line(off, bytes.TrimSuffix(l, []byte("\n")))
		off += int64(len(l))
	}
	if _, ok := tr.ToolContext("c1"); !ok {
		t.Fatal("no tool context once the call was read")
	}
	sc, _ := tr.ToolContext("c1")
	if _, ok := tr.ToolContext("other"); ok {
		t.Error("a tool context for a call no message names")
	}
	for _, l := range lines[called : len(lines)-1] {
		tr.Line(off, bytes.TrimSuffix(l, []byte("\n")))
		off += int64(len(l))
	}
	tr.Close(agentmap.Ending{Reason: vocab.EndEOF})
	var tools int
	for _, s := range rec.Ended() {
		if s.Name() == "execute_tool bash" {
			tools++
			if !s.SpanContext().Equal(sc) {
				t.Errorf("tool span %v, named before as %v", s.SpanContext(), sc)
			}
		}
	}
	if tools != 1 {
		t.Fatalf("%d tool spans", tools)
	}
}

// Call ids x, then x again, then x#1: three calls, three span ids (the
// second x is x's second span, which must not be x#1's first).
func TestCallIDsLikeASecondSpanKeepTheirOwnID(t *testing.T) {
	f := newFile(nil)
	f.user("go")
	for _, id := range []string{"x", "x", "x#1"} {
		f.assistant("toolUse", usage{10, 1}, "bash:"+id)
		f.result(id, false)
	}
	f.assistant("stop", usage{10, 1})
	tools := runs(t, traceBytes(t, f.bytes(), Config{}), 1)[0].find("execute_tool bash")
	if len(tools) != 3 {
		t.Fatalf("%d tool spans, want 3", len(tools))
	}
	seen := map[string]bool{}
	for _, s := range tools {
		id := s.s.SpanContext().SpanID().String()
		if seen[id] {
			t.Errorf("two tool spans share span id %s", id)
		}
		seen[id] = true
	}
}
