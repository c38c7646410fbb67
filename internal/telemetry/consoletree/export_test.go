package consoletree

import (
	"slices"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Options that only tests set: the program never does, so they are no
// part of the package's API.

// WithFields sets the attributes shown on each line, in order.
func WithFields(fields ...Field) Option {
	fields = slices.Clone(fields)
	return option.Func[config](func(c *config) { c.fields = fields })
}
