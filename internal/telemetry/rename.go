package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

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
// and the schema those follow. A changed span is rebuilt through the SDK's
// own SpanStub, so nothing here depends on how the SDK implements
// ReadOnlySpan.
type renaming struct {
	sdktrace.SpanProcessor
	f      func([]attribute.KeyValue) []attribute.KeyValue // nil: the attributes stay
	schema string                                          // "": the scope's stays
}

func (r renaming) OnEnd(s sdktrace.ReadOnlySpan) {
	attrs, scope := s.Attributes(), s.InstrumentationScope()
	changed := false
	if r.f != nil {
		if a := r.f(attrs); !same(a, attrs) {
			attrs, changed = a, true
		}
	}
	if r.schema != "" && scope.SchemaURL != r.schema {
		scope.SchemaURL, changed = r.schema, true
	}
	if changed {
		stub := tracetest.SpanStubFromReadOnlySpan(s)
		stub.Attributes, stub.InstrumentationScope = attrs, scope
		s = stub.Snapshot()
	}
	r.SpanProcessor.OnEnd(s)
}

// same reports whether f handed back its argument.
func same(a, b []attribute.KeyValue) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
