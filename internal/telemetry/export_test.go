package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
)

// Options that only tests set: the program never does, so they are no
// part of the package's API.

// WithRetry tunes the OTLP exporters' retry. The default is the exporters'
// own: 5s initial interval, 30s at most between attempts, 1m in all.
func WithRetry(r Retry) Option {
	return option.Func[options](func(o *options) { o.retry = r })
}

// WithSpoolRetry sets how often the spool is tried while spans wait in
// it; 10s by default.
func WithSpoolRetry(d time.Duration) Option {
	return option.Func[options](func(o *options) { o.spoolRetry = d })
}

// ForceFlush exports what is buffered now, bounded by ctx.
func (t *Pipeline) ForceFlush(ctx context.Context) error {
	errs := []error{t.tp.ForceFlush(ctx)}
	if t.lp != nil {
		errs = append(errs, t.lp.ForceFlush(ctx))
	}
	return errors.Join(append(errs, t.mp.ForceFlush(ctx))...)
}
