// Package option is how pi-otel's internal packages write functional options:
// the OpenTelemetry SDK's, where an Option is a value applied to a copy of a
// package's unexported config. A package declares
//
//	type Option = option.Option[config]
//
// and writes each WithX as option.Func[config](func(c *config) { ... }).
// Keeping the pattern here, not once per package, is why the packages'
// option files are short.
package option

// Option changes a configuration of type C. Only [Func] implements it, so
// every option of every package is applied the same way.
type Option[C any] interface {
	apply(C) C
}

// Func is an [Option] made of a function that edits the configuration.
type Func[C any] func(*C)

func (f Func[C]) apply(c C) C {
	f(&c)
	return c
}

// Apply returns defaults with opts applied in order; nil options are
// skipped, so callers can build option lists conditionally.
func Apply[C any](defaults C, opts []Option[C]) C {
	c := defaults
	for _, o := range opts {
		if o != nil {
			c = o.apply(c)
		}
	}
	return c
}
