package telemetry

import (
	"context"
	"errors"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/internal/content/redact"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Names reach telemetry whether or not content is captured: the project
// folder's name, model, provider, tool and agent names, a usage entry's
// kind, a thinking level, a stop reason, an extension's path go into span
// names, attributes and events, and so into metric labels and log records.
// A name is text someone chose, and a key pasted into a folder's or a
// tool's name would be exported with it. So a span's name and every string
// its attributes, its events' and its links' attributes carry pass through
// the redactor's rules (the built-in ones and the user's --redact
// patterns), always, on their way to every span processor. That the set is
// open is the point: a name under a key added later is scrubbed without
// anyone listing it. Only notNames are left alone.

// notNames are the string attributes that are not scrubbed: ids, which
// Pi, a provider or the RPC controller generates, which must stay whole
// to join spans, records and Pi's files, and which, all different, would
// only fill the memo; and captured content, which the capture has already
// redacted with the same rules (and cut), and which a second pass would
// only cost.
var notNames = map[attribute.Key]bool{
	vocab.GenAIConversationIDKey:  true,
	vocab.GenAIToolCallIDKey:      true,
	vocab.GenAIResponseIDKey:      true,
	vocab.RPCIDKey:                true,
	vocab.UIIDKey:                 true,
	vocab.NestedSessionIDKey:      true,
	vocab.BranchParentEntryIDKey:  true,
	vocab.BranchFromEntryIDKey:    true,
	vocab.SessionParentIDKey:      true,
	vocab.LabelTargetIDKey:        true,
	semconv.VCSRefHeadRevisionKey: true,

	vocab.GenAIInputMessagesKey:      true,
	vocab.GenAIOutputMessagesKey:     true,
	vocab.GenAISystemInstructionsKey: true,
	vocab.GenAIToolCallArgumentsKey:  true,
	vocab.GenAIToolCallResultKey:     true,
	vocab.NestedTaskKey:              true,
	vocab.ExtensionErrorKey:          true,
	vocab.SessionNameKey:             true,
	vocab.LabelKey:                   true,
	vocab.CustomContentKey:           true,
	vocab.BashCommandKey:             true,
	vocab.CwdKey:                     true,
}

// The memo of scrubbed names is bounded in entries and in bytes. Names
// repeat (one model, a few tools, the closed values), so a small memo
// makes the redactor's cost vanish from the plain path; past it, strings
// are scrubbed without being kept.
const (
	maxNamesCached     = 4096
	maxNameBytesCached = 1 << 20
)

type nameScrubber struct {
	r     *redact.Redactor
	mu    sync.Mutex
	memo  map[string]string
	bytes int // of the memo's keys
}

func newNameScrubber(patterns []string) *nameScrubber {
	r, err := redact.New(redact.WithPatterns(patterns...))
	if err != nil {
		// A bad user pattern was reported by the configuration; the
		// built-in rules still apply.
		r, _ = redact.New()
	}
	return &nameScrubber{r: r, memo: make(map[string]string)}
}

func (n *nameScrubber) scrub(s string) string {
	if s == "" {
		return s
	}
	n.mu.Lock()
	out, ok := n.memo[s]
	n.mu.Unlock()
	if ok {
		return out
	}
	out = n.r.Redact(s)
	n.mu.Lock()
	if len(n.memo) < maxNamesCached && n.bytes+len(s) <= maxNameBytesCached {
		n.memo[s] = out
		n.bytes += len(s)
	}
	n.mu.Unlock()
	return out
}

// attrs returns kvs with their strings scrubbed, and whether any changed.
// kvs is never modified: the SDK hands every processor the same slices,
// the span's own, so a change goes into a copy.
func (n *nameScrubber) attrs(kvs []attribute.KeyValue) ([]attribute.KeyValue, bool) {
	out, copied := kvs, false
	for i, kv := range kvs {
		if notNames[kv.Key] {
			continue
		}
		if v, ok := n.value(kv.Value); ok {
			if !copied {
				out, copied = slices.Clone(kvs), true
			}
			out[i] = attribute.KeyValue{Key: kv.Key, Value: v}
		}
	}
	return out, copied
}

// value scrubs a string or each string of a slice; ok is false when
// nothing changed.
func (n *nameScrubber) value(v attribute.Value) (attribute.Value, bool) {
	switch v.Type() {
	case attribute.STRING:
		s := v.AsString()
		if w := n.scrub(s); w != s {
			return attribute.StringValue(w), true
		}
	case attribute.STRINGSLICE:
		ss := v.AsStringSlice() // a copy
		changed := false
		for i, s := range ss {
			if w := n.scrub(s); w != s {
				ss[i], changed = w, true
			}
		}
		if changed {
			return attribute.StringSliceValue(ss), true
		}
	}
	return v, false
}

// scrubEach returns xs with the attributes at attrs(&x) scrubbed, and whether
// any changed; xs is never modified. It serves a span's events and links.
func scrubEach[T any](n *nameScrubber, xs []T, attrs func(*T) *[]attribute.KeyValue) ([]T, bool) {
	out, copied := xs, false
	for i := range xs {
		if a, ok := n.attrs(*attrs(&xs[i])); ok {
			if !copied {
				out, copied = slices.Clone(xs), true
			}
			*attrs(&out[i]) = a
		}
	}
	return out, copied
}

// scrubbing hands every span processor (the exporter's, the metrics' and
// the logs') spans whose name and strings have been through the redactor,
// so no consumer sees a raw name. It is the one processor the
// provider holds, so a span is scrubbed once, not once per consumer; the
// others are called in the order given, as the provider would.
type scrubbing struct {
	procs []sdktrace.SpanProcessor
	n     *nameScrubber
}

func (p scrubbing) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	for _, q := range p.procs {
		q.OnStart(ctx, s)
	}
}

func (p scrubbing) OnEnd(s sdktrace.ReadOnlySpan) {
	name := p.n.scrub(s.Name())
	attrs, a := p.n.attrs(s.Attributes())
	events, e := scrubEach(p.n, s.Events(), func(ev *sdktrace.Event) *[]attribute.KeyValue { return &ev.Attributes })
	links, l := scrubEach(p.n, s.Links(), func(lk *sdktrace.Link) *[]attribute.KeyValue { return &lk.Attributes })
	if a || e || l || name != s.Name() {
		// Rebuilt through the SDK's own SpanStub: the processors share
		// its slices, as they would the SDK's, and none modifies them.
		stub := tracetest.SpanStubFromReadOnlySpan(s)
		stub.Name, stub.Attributes, stub.Events, stub.Links = name, attrs, events, links
		s = stub.Snapshot()
	}
	for _, q := range p.procs {
		q.OnEnd(s)
	}
}

// Shutdown and ForceFlush stop at a done ctx between processors, as the
// provider does between the processors it holds.
func (p scrubbing) Shutdown(ctx context.Context) error {
	return p.each(ctx, sdktrace.SpanProcessor.Shutdown)
}

func (p scrubbing) ForceFlush(ctx context.Context) error {
	return p.each(ctx, sdktrace.SpanProcessor.ForceFlush)
}

func (p scrubbing) each(ctx context.Context, f func(sdktrace.SpanProcessor, context.Context) error) error {
	var errs []error
	for _, q := range p.procs {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		errs = append(errs, f(q, ctx))
	}
	return errors.Join(errs...)
}
