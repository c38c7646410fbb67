package telemetry

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/content/redact"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Names reach telemetry whether or not content is captured: the project
// folder's name, model, provider, tool and agent names go into span names,
// attributes and so into metric labels and log records. A name is text
// someone chose, and a key pasted into a folder's or a tool's name would
// be exported with it. So span names and the attributes that carry names
// pass through the redactor's rules (the built-in ones and the user's
// --redact patterns), always, on their way to every span processor; other
// attributes are numbers, ids, enums, or content, redacted when captured.

// nameKeys are the attributes that carry a name.
var nameKeys = map[attribute.Key]bool{
	"gen_ai.request.model":  true,
	"gen_ai.response.model": true,
	"gen_ai.provider.name":  true,
	"gen_ai.system":         true, // the older conventions' provider
	"gen_ai.tool.name":      true,
	"gen_ai.agent.name":     true,
	vocab.ProjectKey:        true,
	vocab.ProviderKey:       true,
}

// maxNamesCached bounds the memo of scrubbed names. Names repeat (one
// model, a few tools), so a small memo makes the redactor's cost vanish
// from the plain path; past it, names are scrubbed without being kept.
const maxNamesCached = 4096

type nameScrubber struct {
	r    *redact.Redactor
	mu   sync.Mutex
	memo map[string]string
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
	if len(n.memo) < maxNamesCached {
		n.memo[s] = out
	}
	n.mu.Unlock()
	return out
}

// attrs scrubs the name attributes of kvs in place, and reports whether
// it changed any.
func (n *nameScrubber) attrs(kvs []attribute.KeyValue) bool {
	changed := false
	for i, kv := range kvs {
		if nameKeys[kv.Key] && kv.Value.Type() == attribute.STRING {
			if v, w := kv.Value.AsString(), n.scrub(kv.Value.AsString()); w != v {
				kvs[i], changed = kv.Key.String(w), true
			}
		}
	}
	return changed
}

// scrubbing hands every span processor (the exporter's, the metrics' and
// the logs') spans whose name and name attributes have been through the
// redactor, so no consumer sees a raw name. It is the one processor the
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
	name, attrs := s.Name(), s.Attributes() // Attributes is a copy
	if scrubbed := p.n.scrub(name); p.n.attrs(attrs) || scrubbed != name {
		s = scrubbedSpan{ReadOnlySpan: s, name: scrubbed, attrs: attrs}
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

// scrubbedSpan is a finished span with another name and attributes;
// everything else is the original's.
type scrubbedSpan struct {
	sdktrace.ReadOnlySpan
	name  string
	attrs []attribute.KeyValue
}

func (s scrubbedSpan) Name() string                     { return s.name }
func (s scrubbedSpan) Attributes() []attribute.KeyValue { return s.attrs }
