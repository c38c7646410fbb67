package consoletree_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/telemetry/consoletree"
)

var (
	t0   = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tid1 = trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	tid2 = trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}
)

// stub builds a recorded span: id and parent are small numbers, times are
// milliseconds after t0.
func stub(tid trace.TraceID, id, parent byte, name string, startMs, endMs int, attrs ...attribute.KeyValue) tracetest.SpanStub {
	s := tracetest.SpanStub{
		Name: name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: trace.SpanID{7: id}, TraceFlags: trace.FlagsSampled,
		}),
		StartTime:  t0.Add(time.Duration(startMs) * time.Millisecond),
		EndTime:    t0.Add(time.Duration(endMs) * time.Millisecond),
		Attributes: attrs,
	}
	if parent != 0 {
		s.Parent = trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: trace.SpanID{7: parent}, TraceFlags: trace.FlagsSampled,
		})
	}
	return s
}

func spans(stubs ...tracetest.SpanStub) []sdktrace.ReadOnlySpan {
	return tracetest.SpanStubs(stubs).Snapshots()
}

// agentRun is one Pi run: an agent span, two model calls, a tool call under
// the first, listed in the order they end.
func agentRun() []tracetest.SpanStub {
	tool := stub(tid1, 3, 2, "execute_tool bash", 900, 915, attribute.String("gen_ai.tool.name", "bash"))
	tool.Status = sdktrace.Status{Code: codes.Error, Description: "exit code 1"}
	chat1 := stub(tid1, 2, 1, "chat gpt-4o", 100, 1300,
		attribute.String("gen_ai.request.model", "gpt-4o"),
		attribute.Int("gen_ai.usage.input_tokens", 812),
		attribute.Int("gen_ai.usage.output_tokens", 96),
		attribute.String("gen_ai.prompt", "never shown"))
	chat2 := stub(tid1, 4, 1, "chat gpt-4o", 1300, 2400, attribute.String("gen_ai.request.model", "gpt-4o"))
	root := stub(tid1, 1, 0, "invoke_agent pi", 0, 2410, attribute.String("pi.end_reason", "stop"))
	root.Status = sdktrace.Status{Code: codes.Ok}
	return []tracetest.SpanStub{tool, chat1, chat2, root}
}

const agentTree = `trace 4bf92f3577b34da6a3ce929d0e0e4736
invoke_agent pi  2.41s  OK  end_reason=stop
├─ chat gpt-4o  1.20s  model=gpt-4o in=812 out=96
│  └─ execute_tool bash  15ms  ERROR: exit code 1  tool=bash
└─ chat gpt-4o  1.10s  model=gpt-4o
`

func TestTree(t *testing.T) {
	var buf bytes.Buffer
	exp := consoletree.New(&buf)
	if err := exp.ExportSpans(context.Background(), spans(agentRun()...)); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != agentTree {
		t.Errorf("tree:\n%s\nwant:\n%s", got, agentTree)
	}
	// Nothing is left to draw at Shutdown.
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != agentTree {
		t.Errorf("Shutdown drew more:\n%s", got[len(agentTree):])
	}
}

func TestTreeAcrossBatches(t *testing.T) {
	run := agentRun()
	var buf bytes.Buffer
	exp := consoletree.New(&buf)
	ctx := context.Background()
	// Children arrive one by one, in an order unlike their start times;
	// nothing is drawn until the root ends.
	for _, s := range []tracetest.SpanStub{run[2], run[0], run[1]} {
		if err := exp.ExportSpans(ctx, spans(s)); err != nil {
			t.Fatal(err)
		}
		if buf.Len() != 0 {
			t.Fatalf("drew before the root ended:\n%s", buf.String())
		}
	}
	if err := exp.ExportSpans(ctx, spans(run[3])); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != agentTree {
		t.Errorf("tree:\n%s\nwant:\n%s", got, agentTree)
	}
}

func TestInterleavedTracesAndRemoteParent(t *testing.T) {
	// A second trace whose root has a remote parent (pi-otel started under
	// a TRACEPARENT) is a local root too.
	other := stub(tid2, 9, 0, "invoke_agent pi", 50, 60)
	other.Parent = trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid2, SpanID: trace.SpanID{0xee}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	otherChild := stub(tid2, 10, 9, "chat m", 51, 52)
	run := agentRun()

	var buf bytes.Buffer
	exp := consoletree.New(&buf, consoletree.WithFields())
	batch := spans(run[0], otherChild, run[1], other, run[2], run[3])
	if err := exp.ExportSpans(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	want := `trace 0af7651916cd43dd8448eb211c80319c
invoke_agent pi  10ms
└─ chat m  1.0ms
trace 4bf92f3577b34da6a3ce929d0e0e4736
invoke_agent pi  2.41s  OK
├─ chat gpt-4o  1.20s
│  └─ execute_tool bash  15ms  ERROR: exit code 1
└─ chat gpt-4o  1.10s
`
	if got := buf.String(); got != want {
		t.Errorf("trees:\n%s\nwant:\n%s", got, want)
	}
}

func TestLeftoversAtShutdown(t *testing.T) {
	// The root never ends (pi was killed): its children are drawn at
	// Shutdown, under a note, and not before.
	orphan := stub(tid1, 5, 1, "chat m", 10, 20)
	grandchild := stub(tid1, 6, 5, "execute_tool read", 12, 13, attribute.String("gen_ai.tool.name", "read"))
	late := stub(tid1, 7, 1, "chat m", 30, 35)
	var buf bytes.Buffer
	exp := consoletree.New(&buf)
	ctx := context.Background()
	if err := exp.ExportSpans(ctx, spans(grandchild, late, orphan)); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Fatalf("drew without a root:\n%s", buf.String())
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	want := `trace 4bf92f3577b34da6a3ce929d0e0e4736 (incomplete: its root span did not end)
chat m  10ms
└─ execute_tool read  1.0ms  tool=read
chat m  5.0ms
`
	if got := buf.String(); got != want {
		t.Errorf("leftovers:\n%s\nwant:\n%s", got, want)
	}
	// After Shutdown nothing more is drawn.
	if err := exp.ExportSpans(ctx, spans(stub(tid2, 1, 0, "x", 0, 1))); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != want {
		t.Errorf("drew after Shutdown: %q", got[len(want):])
	}
}

func TestFormatting(t *testing.T) {
	tests := []struct {
		name string
		span tracetest.SpanStub
		want string
	}{
		{"microseconds", stub(tid1, 1, 0, "a", 0, 0), "a  0s"},
		{"hours", stub(tid1, 1, 0, "a", 0, 3_725_000), "a  1h02m"},
		{"minutes", stub(tid1, 1, 0, "a", 0, 125_000), "a  2m05s"},
		{"sub-10ms", stub(tid1, 1, 0, "a", 0, 7), "a  7.0ms"},
		{"newlines and quoting", stub(tid1, 1, 0, "a\nb", 0, 20,
			attribute.String("gen_ai.request.model", "two words"),
			attribute.String("pi.end_reason", "a\"b")), `a b  20ms  model="two words" end_reason="a\"b"`},
		{"long values clipped", stub(tid1, 1, 0, "a", 0, 20,
			attribute.String("gen_ai.request.model", strings.Repeat("x", 100))),
			"a  20ms  model=" + strings.Repeat("x", 59) + "…"},
		{"error without message", func() tracetest.SpanStub {
			s := stub(tid1, 1, 0, "a", 0, 20)
			s.Status = sdktrace.Status{Code: codes.Error}
			return s
		}(), "a  20ms  ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := consoletree.New(&buf).ExportSpans(context.Background(), spans(tt.span)); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
			if len(lines) != 2 || lines[1] != tt.want {
				t.Errorf("got %q, want line %q", buf.String(), tt.want)
			}
		})
	}
	// Sub-millisecond spans show microseconds.
	s := stub(tid1, 1, 0, "a", 0, 0)
	s.EndTime = s.StartTime.Add(850 * time.Microsecond)
	var buf bytes.Buffer
	if err := consoletree.New(&buf).ExportSpans(context.Background(), spans(s)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "a  850µs\n") {
		t.Errorf("got %q", buf.String())
	}
}

func TestColor(t *testing.T) {
	var plain, colored bytes.Buffer
	ctx := context.Background()
	if err := consoletree.New(&plain).ExportSpans(ctx, spans(agentRun()...)); err != nil {
		t.Fatal(err)
	}
	if err := consoletree.New(&colored, consoletree.WithColor(true)).ExportSpans(ctx, spans(agentRun()...)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "\x1b[") {
		t.Errorf("plain output has escapes: %q", plain.String())
	}
	if !strings.Contains(colored.String(), "\x1b[31mERROR: exit code 1\x1b[0m") {
		t.Errorf("coloured output lacks a red ERROR: %q", colored.String())
	}
	// Stripped of escapes, the coloured tree is the plain one.
	if stripANSI(colored.String()) != plain.String() {
		t.Errorf("coloured tree differs:\n%s", stripANSI(colored.String()))
	}
	if consoletree.ColorFor(&plain, false) {
		t.Error("a buffer is not a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if consoletree.ColorFor(f, false) {
		t.Error("a regular file is not a terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !consoletree.ColorFor(tty, false) || consoletree.ColorFor(tty, true) {
			t.Error("a terminal is coloured unless NO_COLOR is set")
		}
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
