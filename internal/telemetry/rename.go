package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
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

// renaming hands the exporting processor spans with rewritten attributes.
type renaming struct {
	sdktrace.SpanProcessor
	f func([]attribute.KeyValue) []attribute.KeyValue
}

func (r renaming) OnEnd(s sdktrace.ReadOnlySpan) {
	attrs := s.Attributes()
	if out := r.f(attrs); !same(out, attrs) {
		s = renamedSpan{ReadOnlySpan: s, attrs: out}
	}
	r.SpanProcessor.OnEnd(s)
}

// same reports whether f handed back its argument.
func same(a, b []attribute.KeyValue) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// renamedSpan is a finished span with other attributes; everything else is
// the original's.
type renamedSpan struct {
	sdktrace.ReadOnlySpan
	attrs []attribute.KeyValue
}

func (s renamedSpan) Attributes() []attribute.KeyValue { return s.attrs }
