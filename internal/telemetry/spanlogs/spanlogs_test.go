package spanlogs_test

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/rpc"
	"github.com/pi-otel/pi-otel/internal/telemetry/spanlogs"
	"github.com/pi-otel/pi-otel/internal/testutil/logtest"
	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

type harness struct {
	spans *tracetest.SpanRecorder
	logs  *logtest.Memory
	tp    *sdktrace.TracerProvider
}

func newHarness(cfg spanlogs.Config) *harness {
	h := &harness{spans: tracetest.NewSpanRecorder(), logs: &logtest.Memory{}}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans),
		sdktrace.WithSpanProcessor(spanlogs.New(logtest.NewProvider(h.logs), cfg)))
	return h
}

// replay maps a real capture the way `pi-otel replay` does.
func (h *harness) replay(t *testing.T, version, name string, end agentmap.Ending) {
	t.Helper()
	replaytest.Map(agentmap.New(h.tp), replaytest.Capture(t, version, name), end)
}

func attrsOf(r *sdklog.Record) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	r.WalkAttributes(func(kv attribute.KeyValue) bool { out[kv.Key] = kv.Value; return true })
	return out
}

// TestCapturesGiveRecordsTiedToTheirSpans replays real Pi 1.6.0 runs and
// checks each record: its event name, that its trace and span ids are
// those of a span of the run, of the kind the event belongs to, that its
// time is the span's end (or the prompt's), and that it carries the span's
// attributes.
func TestCapturesGiveRecordsTiedToTheirSpans(t *testing.T) {
	settled := agentmap.Ending{Reason: vocab.EndEOF}
	tests := []struct {
		name string
		end  agentmap.Ending
		want map[string]int
	}{
		{"text", settled, map[string]int{vocab.LogUserPrompt: 1, vocab.LogModelCallFinished: 1, vocab.LogRunSettled: 1}},
		{"bash-tool", settled, map[string]int{vocab.LogUserPrompt: 1, vocab.LogModelCallFinished: 2, vocab.LogToolResult: 1, vocab.LogRunSettled: 1}},
		{"retry-529", settled, map[string]int{vocab.LogUserPrompt: 1, vocab.LogModelCallFailed: 1, vocab.LogModelCallFinished: 1, vocab.LogRetry: 1, vocab.LogRunSettled: 1}},
		// 5 model calls: 3 answers and 2 compaction summaries.
		{"threshold-compaction", settled, map[string]int{vocab.LogUserPrompt: 2, vocab.LogModelCallFinished: 5, vocab.LogToolResult: 1, vocab.LogCompaction: 2, vocab.LogRunSettled: 2}},
		{"sigint-mid-tool", agentmap.Ending{Reason: vocab.EndSignal, ExitCode: 130, Signal: "SIGINT"},
			map[string]int{vocab.LogUserPrompt: 1, vocab.LogModelCallFinished: 1, vocab.LogToolResult: 1, vocab.LogRunCut: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(spanlogs.Config{})
			h.replay(t, "pi-1.6.0", tt.name, tt.end)
			spans := map[trace.SpanID]sdktrace.ReadOnlySpan{}
			for _, s := range h.spans.Ended() {
				spans[s.SpanContext().SpanID()] = s
			}
			got := map[string]int{}
			records := h.logs.Records()
			for i := range records {
				r := &records[i]
				got[r.EventName()]++
				s, ok := spans[r.SpanID()]
				if !ok {
					t.Errorf("%s: span %s is not one of the run's", r.EventName(), r.SpanID())
					continue
				}
				if r.TraceID() != s.SpanContext().TraceID() || !r.TraceFlags().IsSampled() {
					t.Errorf("%s: trace %s flags %s, span's %s", r.EventName(), r.TraceID(), r.TraceFlags(), s.SpanContext().TraceID())
				}
				if r.Body().AsString() != r.EventName() || r.ObservedTimestamp().IsZero() {
					t.Errorf("%s: body %q, observed %v", r.EventName(), r.Body().String(), r.ObservedTimestamp())
				}
				a := attrsOf(r)
				if a["gen_ai.conversation.id"].AsString() == "" {
					t.Errorf("%s: no gen_ai.conversation.id", r.EventName())
				}
				if r.EventName() == vocab.LogUserPrompt {
					if s.Name() != vocab.SpanRoot && s.Name() != vocab.SpanTurn {
						t.Errorf("prompt tied to %q", s.Name())
					}
					found := false
					for _, ev := range s.Events() {
						found = found || (ev.Name == vocab.EventUserMessage && ev.Time.Equal(r.Timestamp()))
					}
					if !found || a[vocab.MessageCharsKey].AsInt64() <= 0 {
						t.Errorf("prompt: no pi.user_message at %v on its span, or no size (%v)", r.Timestamp(), a)
					}
					continue
				}
				wantSpan := map[string]string{
					vocab.LogModelCallFinished: "chat ", vocab.LogModelCallFailed: "chat ",
					vocab.LogToolResult: "execute_tool ", vocab.LogRetry: vocab.SpanRetry,
					vocab.LogCompaction: vocab.SpanCompaction, vocab.LogRunSettled: vocab.SpanRoot,
					vocab.LogRunCut: vocab.SpanRoot,
				}[r.EventName()]
				if wantSpan == "" || !strings.HasPrefix(s.Name(), wantSpan) {
					t.Errorf("%s tied to %q", r.EventName(), s.Name())
				}
				if !r.Timestamp().Equal(s.EndTime()) {
					t.Errorf("%s: time %v, span ended %v", r.EventName(), r.Timestamp(), s.EndTime())
				}
				if r.AttributesLen() != len(s.Attributes()) {
					t.Errorf("%s: %d attributes, span has %d", r.EventName(), r.AttributesLen(), len(s.Attributes()))
				}
				for _, kv := range s.Attributes() {
					if a[kv.Key] != kv.Value {
						t.Errorf("%s: %s=%s, span has %s", r.EventName(), kv.Key, a[kv.Key].String(), kv.Value.String())
					}
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("records %v, want %v", got, tt.want)
			}
			for k, n := range tt.want {
				if got[k] != n {
					t.Errorf("records %v, want %v", got, tt.want)
					break
				}
			}
		})
	}
}

// TestSeverities: failures stand out from routine events.
func TestSeverities(t *testing.T) {
	h := newHarness(spanlogs.Config{})
	h.replay(t, "pi-1.6.0", "retry-529", agentmap.Ending{Reason: vocab.EndEOF})
	h.replay(t, "pi-1.6.0", "sigint-mid-tool", agentmap.Ending{Reason: vocab.EndSignal, ExitCode: 130, Signal: "SIGINT"})
	want := map[string]log.Severity{
		vocab.LogModelCallFailed: log.SeverityError, vocab.LogModelCallFinished: log.SeverityInfo,
		vocab.LogRetry: log.SeverityInfo, vocab.LogRunSettled: log.SeverityInfo, vocab.LogRunCut: log.SeverityWarn,
		vocab.LogUserPrompt: log.SeverityInfo,
		// The bash call Ctrl-C cut short.
		vocab.LogToolResult: log.SeverityWarn,
	}
	records := h.logs.Records()
	for i := range records {
		r := &records[i]
		if w, ok := want[r.EventName()]; !ok || r.Severity() != w || r.SeverityText() != w.String() {
			t.Errorf("%s: severity %s %q, want %s", r.EventName(), r.Severity(), r.SeverityText(), w)
		}
	}
}

// TestDialogs: an answered dialog and one nobody answered, as the RPC
// tracer ends them (docs/rpc.md); RPC command spans give no record.
func TestDialogs(t *testing.T) {
	h := newHarness(spanlogs.Config{})
	tr := h.tp.Tracer("test")
	for _, o := range []vocab.UIOutcome{vocab.UIConfirmed, vocab.UIValue, vocab.UICancelled, vocab.UITimedOut, vocab.UIUnanswered} {
		_, s := tr.Start(context.Background(), vocab.SpanExtensionUI.Name("confirm"))
		s.SetAttributes(vocab.UIMethodKey.String("confirm"), o.Attr())
		s.End()
	}
	_, s := tr.Start(context.Background(), vocab.SpanRPC.Name("prompt"))
	s.End()
	var got []string
	records := h.logs.Records()
	for i := range records {
		r := &records[i]
		got = append(got, r.EventName()+"/"+attrsOf(r)[vocab.UIOutcomeKey].AsString())
	}
	want := []string{"pi.dialog.answered/confirmed", "pi.dialog.answered/value", "pi.dialog.answered/cancelled",
		"pi.dialog.unanswered/timed_out", "pi.dialog.unanswered/unanswered"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("records %v, want %v", got, want)
	}
}

// TestLatestNames: with the latest conventions the records take the names
// the spans leave with.
func TestLatestNames(t *testing.T) {
	h := newHarness(spanlogs.Config{Rename: vocab.Latest})
	h.replay(t, "pi-1.6.0", "bash-tool", agentmap.Ending{Reason: vocab.EndEOF})
	n := 0
	records := h.logs.Records()
	for i := range records {
		r := &records[i]
		a := attrsOf(r)
		if _, ok := a[vocab.GenAIUsageCacheCreationKey]; ok {
			t.Errorf("%s: v1.41 name %s", r.EventName(), vocab.GenAIUsageCacheCreationKey)
		}
		switch r.EventName() {
		case vocab.LogModelCallFinished:
			n++
			if _, ok := a[vocab.GenAIUsageCacheWriteKey]; !ok {
				t.Errorf("%s: no %s", r.EventName(), vocab.GenAIUsageCacheWriteKey)
			}
		case vocab.LogRunSettled:
			n++
			if _, ok := a[vocab.GenAIProviderNameKey]; ok {
				t.Errorf("%s: %s on invoke_agent", r.EventName(), vocab.GenAIProviderNameKey)
			}
		}
	}
	if n != 3 {
		t.Errorf("checked %d records, want 3", n)
	}
}

// TestRecordedRPCSessionDialogs: a recorded real `pi --mode rpc` session
// with extension dialogs (internal/rpc's extension-ui transcript), played
// through the RPC tracer: each dialog gives one record tied to its
// pi.extension_ui span, answered or not as the human did.
func TestRecordedRPCSessionDialogs(t *testing.T) {
	h := newHarness(spanlogs.Config{})
	f, err := os.Open(repo.Path("internal/rpc/testdata/transcripts/extension-ui.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := rpctest.ReadTranscript(f, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	tr := rpc.New(agentmap.New(h.tp), h.tp)
	var at time.Time
	for _, l := range lines {
		raw := bytes.TrimSuffix(l.Raw, []byte{'\r'})
		at = l.At
		if l.Dir == rpctest.In {
			tr.FromController(raw, l.At)
		} else {
			tr.FromPi(raw, l.At)
		}
	}
	tr.Close(agentmap.Ending{Reason: vocab.EndExit}, at.Add(time.Millisecond))

	spans := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range h.spans.Ended() {
		spans[s.SpanContext().SpanID()] = s
	}
	var dialogs []string
	records := h.logs.Records()
	for i := range records {
		r := &records[i]
		if !strings.HasPrefix(r.EventName(), "pi.dialog.") {
			continue
		}
		s := spans[r.SpanID()]
		if s == nil || !strings.HasPrefix(s.Name(), vocab.SpanExtensionUI.Prefix()) {
			t.Errorf("%s tied to %v", r.EventName(), s)
			continue
		}
		dialogs = append(dialogs, r.EventName()+" "+strings.TrimPrefix(s.Name(), vocab.SpanExtensionUI.Prefix())+" "+attrsOf(r)[vocab.UIOutcomeKey].AsString())
	}
	slices.Sort(dialogs)
	want := []string{
		"pi.dialog.answered confirm confirmed", "pi.dialog.answered confirm confirmed",
		"pi.dialog.answered select cancelled", "pi.dialog.unanswered input timed_out",
	}
	if !slices.Equal(dialogs, want) {
		t.Errorf("dialog records %q, want %q", dialogs, want)
	}
}
