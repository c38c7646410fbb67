// Package spanlogs turns Pi's meaningful events into OpenTelemetry log
// records, for audit and SIEM: a prompt received, a model call finished or
// failed, a tool result, a retry, a compaction, a dialog answered, a run
// settled or cut.
//
// Like package metrics it leaves the mapper alone: [SpanLogs] is an
// sdktrace.SpanProcessor that reads each finished span and emits records
// on the LoggerProvider it was given. Each record carries the trace and span
// ids of the span it belongs to, an event name from vocab (LogUserPrompt,
// …), and the attributes of that span (or, for a prompt, of its
// pi.user_message span event and the span's conversation id). It adds no
// value the span does not carry, so the spans' privacy rules hold for the
// records too: no content unless --capture-content put it on the span,
// redacted there.
//
// A record is emitted when its span ends, with the time of what it
// records: a prompt's record comes out when its turn (or run) ends.
package spanlogs

import (
	"cmp"
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/log"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// ScopeName is the instrumentation scope of every record this package
// emits: public and stable, not the package's path (docs/span-model.md).
const ScopeName = "github.com/pi-otel/pi-otel/logs"

// Config configures SpanLogs.
type Config struct {
	// Rename, when set, rewrites each record's attributes the way the
	// spans' own are rewritten on their way out (the semantic conventions
	// mode), so that records and spans use the same names.
	Rename func([]attribute.KeyValue) []attribute.KeyValue
	// SchemaURL is the schema the records declare: the one Rename's names
	// follow; vocab.SchemaURL when empty.
	SchemaURL string
	// Now is the observed time; time.Now when nil.
	Now func() time.Time
}

// SpanLogs emits log records for finished spans. It implements
// sdktrace.SpanProcessor.
type SpanLogs struct {
	logger log.Logger
	cfg    Config
}

var _ sdktrace.SpanProcessor = (*SpanLogs)(nil)

// New returns a processor emitting on lp's logger for this package's scope.
func New(lp log.LoggerProvider, cfg Config) *SpanLogs {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.SchemaURL = cmp.Or(cfg.SchemaURL, vocab.SchemaURL)
	return &SpanLogs{logger: lp.Logger(ScopeName, log.WithSchemaURL(cfg.SchemaURL)), cfg: cfg}
}

// OnStart does nothing: every record is known only when its span ends.
func (*SpanLogs) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// Shutdown does nothing; the LoggerProvider owns the records' export.
func (*SpanLogs) Shutdown(context.Context) error { return nil }

// ForceFlush does nothing; flush the LoggerProvider instead.
func (*SpanLogs) ForceFlush(context.Context) error { return nil }

// OnEnd emits the records a finished span stands for.
func (s *SpanLogs) OnEnd(span sdktrace.ReadOnlySpan) {
	ctx := trace.ContextWithSpanContext(context.Background(), span.SpanContext())
	attrs := span.Attributes()
	for _, ev := range span.Events() {
		if ev.Name != vocab.EventUserMessage {
			continue
		}
		a := ev.Attributes
		if v, ok := find(attrs, semconv.GenAIConversationIDKey); ok && !has(a, semconv.GenAIConversationIDKey) {
			a = append(a[:len(a):len(a)], attribute.KeyValue{Key: semconv.GenAIConversationIDKey, Value: v})
		}
		s.emit(ctx, vocab.LogUserPrompt, ev.Time, log.SeverityInfo, a)
	}
	if name, sev := classify(span, attrs); name != "" {
		if cut, _ := boolean(attrs, vocab.UnfinishedKey); cut {
			// Closed by pi-otel, not by Pi (a signal, the end of the
			// stream): whatever it was, it did not complete.
			sev = max(sev, log.SeverityWarn)
		}
		s.emit(ctx, name, span.EndTime(), sev, attrs)
	}
}

func (s *SpanLogs) emit(ctx context.Context, event string, at time.Time, sev log.Severity, attrs []attribute.KeyValue) {
	if s.cfg.Rename != nil {
		attrs = s.cfg.Rename(attrs)
	}
	var r log.Record
	r.SetEventName(event)
	r.SetTimestamp(at)
	r.SetObservedTimestamp(s.cfg.Now())
	r.SetSeverity(sev)
	r.SetSeverityText(sev.String())
	// The body says what happened, for backends that show only the body;
	// the facts are the attributes.
	r.SetBody(attribute.StringValue(event))
	r.AddAttributes(attrs...)
	s.logger.Emit(ctx, r)
}

// classify names the record a span stands for, with its severity, or ""
// for spans that stand for none (pi.agent_run, pi.turn, pi.rpc).
func classify(span sdktrace.ReadOnlySpan, attrs []attribute.KeyValue) (string, log.Severity) {
	failed := span.Status().Code == codes.Error
	name := span.Name()
	op := str(attrs, semconv.GenAIOperationNameKey)
	switch {
	case name == vocab.SpanRoot || op == semconv.GenAIOperationNameInvokeAgent.Value.AsString():
		sev := log.SeverityInfo
		switch vocab.Outcome(str(attrs, vocab.OutcomeKey)) {
		case vocab.OutcomeError:
			sev = log.SeverityError
		case vocab.OutcomeAborted, vocab.OutcomeUnsettled:
			sev = log.SeverityWarn
		default:
			if failed {
				sev = log.SeverityError
			}
		}
		if settled, ok := boolean(attrs, vocab.SettledKey); ok && settled {
			return vocab.LogRunSettled, sev
		}
		return vocab.LogRunCut, max(sev, log.SeverityWarn)
	case op == semconv.GenAIOperationNameChat.Value.AsString():
		if failed {
			return vocab.LogModelCallFailed, log.SeverityError
		}
		return vocab.LogModelCallFinished, log.SeverityInfo
	case op == semconv.GenAIOperationNameExecuteTool.Value.AsString():
		if failed || str(attrs, semconv.ErrorTypeKey) != "" {
			return vocab.LogToolResult, log.SeverityWarn
		}
		return vocab.LogToolResult, log.SeverityInfo
	case name == vocab.SpanRetry:
		switch vocab.RetryOutcome(str(attrs, vocab.RetryOutcomeKey)) {
		case vocab.RetrySuccess:
			return vocab.LogRetry, log.SeverityInfo
		case vocab.RetryExhausted:
			return vocab.LogRetry, log.SeverityError
		}
		return vocab.LogRetry, log.SeverityWarn
	case name == vocab.SpanCompaction:
		if failed {
			return vocab.LogCompaction, log.SeverityWarn
		}
		return vocab.LogCompaction, log.SeverityInfo
	case strings.HasPrefix(name, vocab.SpanExtensionUI.Prefix()) || name == string(vocab.SpanExtensionUI):
		switch vocab.UIOutcome(str(attrs, vocab.UIOutcomeKey)) {
		case vocab.UIConfirmed, vocab.UIValue, vocab.UICancelled:
			return vocab.LogDialogAnswered, log.SeverityInfo
		}
		return vocab.LogDialogUnanswered, log.SeverityWarn
	}
	return "", 0
}

func find(attrs []attribute.KeyValue, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range attrs {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func has(attrs []attribute.KeyValue, k attribute.Key) bool {
	_, ok := find(attrs, k)
	return ok
}

func str(attrs []attribute.KeyValue, k attribute.Key) string {
	if v, ok := find(attrs, k); ok && v.Type() == attribute.STRING {
		return v.AsString()
	}
	return ""
}

func boolean(attrs []attribute.KeyValue, k attribute.Key) (bool, bool) {
	if v, ok := find(attrs, k); ok && v.Type() == attribute.BOOL {
		return v.AsBool(), true
	}
	return false, false
}
