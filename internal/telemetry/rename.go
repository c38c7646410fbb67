package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/option"
)

// WithExportedAttributes rewrites each span's attributes on its way to the
// exporter (the semantic conventions mode, see vocab.Latest). The span
// processors added with WithSpanProcessor and WithLogProcessor still see
// the spans as the mapper made them, and apply the mode themselves. f must
// return its argument when it changes nothing, and must not modify it.
func WithExportedAttributes(f func([]attribute.KeyValue) []attribute.KeyValue) Option {
	return option.Func[options](func(o *options) { o.rename = f })
}

// WithExportedSchemaURL makes exported spans declare url as their scope's
// schema, the conventions their names follow once rewritten (see
// WithExportedAttributes). The resource keeps its own: its names are the
// core conventions'.
func WithExportedSchemaURL(url string) Option {
	return option.Func[options](func(o *options) { o.schema = url })
}

// renaming hands the exporting processor spans with rewritten attributes,
// and the schema those follow.
type renaming struct {
	sdktrace.SpanProcessor
	f      func([]attribute.KeyValue) []attribute.KeyValue // nil: the attributes stay
	schema string                                          // "": the scope's stays
}

func (r renaming) OnEnd(s sdktrace.ReadOnlySpan) {
	out := renamedSpan{ReadOnlySpan: s, attrs: s.Attributes(), scope: s.InstrumentationScope()}
	changed := false
	if r.f != nil {
		if a := r.f(out.attrs); !same(a, out.attrs) {
			out.attrs, changed = a, true
		}
	}
	if r.schema != "" && out.scope.SchemaURL != r.schema {
		out.scope.SchemaURL, changed = r.schema, true
	}
	if changed {
		s = out
	}
	r.SpanProcessor.OnEnd(s)
}

// same reports whether f handed back its argument.
func same(a, b []attribute.KeyValue) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// renamedSpan is a finished span with other attributes or another schema;
// everything else is the original's.
type renamedSpan struct {
	sdktrace.ReadOnlySpan
	attrs []attribute.KeyValue
	scope instrumentation.Scope
}

func (s renamedSpan) Attributes() []attribute.KeyValue { return s.attrs }

func (s renamedSpan) InstrumentationScope() instrumentation.Scope { return s.scope }
