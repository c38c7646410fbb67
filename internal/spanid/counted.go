package spanid

import "context"

type uncountedCtx struct{}

// WithUncounted marks the spans started under ctx, and below them, as a
// run traced again after its export failed: they go out again, but the
// span metrics counted them the first time.
func WithUncounted(ctx context.Context) context.Context {
	return context.WithValue(ctx, uncountedCtx{}, true)
}

// Uncounted reports whether ctx carries WithUncounted.
func Uncounted(ctx context.Context) bool {
	v, _ := ctx.Value(uncountedCtx{}).(bool)
	return v
}
