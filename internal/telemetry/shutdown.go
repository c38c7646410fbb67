package telemetry

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

func (t *Pipeline) closeAll() error {
	var errs []error
	for _, f := range t.files {
		errs = append(errs, f.Close())
	}
	t.files = nil
	return errors.Join(errs...)
}

// FlushSpans exports the spans queued so far, bounded by ctx; metrics keep
// their own interval. It flushes the SDK's provider itself, which
// TracerProvider may wrap (an attribute length limit does), so a caller
// never has to find ForceFlush by assertion.
func (t *Pipeline) FlushSpans(ctx context.Context) error { return t.tp.ForceFlush(ctx) }

// FlushLogs exports the log records queued so far, bounded by ctx; nil
// when logs are off.
func (t *Pipeline) FlushLogs(ctx context.Context) error {
	if t.lp == nil {
		return nil
	}
	return t.lp.ForceFlush(ctx)
}

// Shutdown flushes and stops the pipeline, spending at most the configured
// flush timeout (less if ctx ends sooner). Spans not exported by then are
// counted as dropped. Export problems have already been reported on stderr;
// the error is for logs and tests. Calls after the first return its result.
func (t *Pipeline) Shutdown(ctx context.Context) error {
	t.shutdownOnce.Do(func() { t.shutdownErr = t.shutdown(ctx) })
	return t.shutdownErr
}

func (t *Pipeline) shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.FlushTimeout)
	defer cancel()
	// An exporter blocked on a file nobody reads gives up with the flush,
	// releasing what it holds, so shutdown itself cannot hang.
	for _, f := range t.files {
		stop := context.AfterFunc(ctx, func() { f.SetDeadline(time.Now()) })
		defer stop()
	}
	var errs []error

	if t.traceWatch != nil && t.queue != nil {
		// A collector found missing during the flush will not appear in
		// the seconds left: give up instead of sitting out the backoff.
		// That goes for the spool's send too, which holds the exporter
		// open while it waits to retry; what it holds stays spooled.
		giveUp := func() { t.queue.exp.abort(); t.abortSpool() }
		if t.traceWatch.beginShutdown(giveUp) {
			t.abortSpool()
			t.traceWatch.reconnect(ctx)
			t.queue.exp.kick()
		}
	}
	errs = append(errs, t.tp.Shutdown(ctx))
	if t.queue != nil {
		// The provider skips its processors when ctx has already ended.
		errs = append(errs, t.queue.Shutdown(ctx))
	}
	t.counters.freeze(t.queue != nil)
	t.stopSpool(ctx)

	// Log records come from spans as they end, so they are flushed after
	// the traces and before the metrics.
	if t.lp != nil {
		lctx, lcancel := context.WithCancel(ctx)
		defer lcancel()
		if t.logWatch != nil && t.logWatch.beginShutdown(lcancel) {
			t.logWatch.reconnect(lctx)
		}
		errs = append(errs, t.lp.Shutdown(lctx))
		t.logCount.wait(ctx)
		t.logsDone.Store(true)
	}

	mctx, mcancel := context.WithCancel(ctx)
	defer mcancel()
	if t.metricWatch != nil && t.metricWatch.beginShutdown(mcancel) {
		t.metricWatch.reconnect(mctx)
	}
	// A failed last export was reported as it happened, with the fix;
	// the same failure again, as the SDK words it, would only be noise.
	if err := t.mp.Shutdown(mctx); err != nil && (t.metricWatch == nil || !t.metricWatch.hasFailed()) {
		errs = append(errs, err)
	}
	errs = append(errs, t.closeAll())
	return errors.Join(errs...)
}

// Destinations names where the flush at exit sends what is left: the
// trace, log and metric destinations in use, each once.
func (t *Pipeline) Destinations() []string {
	var out []string
	for _, d := range []string{t.traceDest, t.logDest, t.metricDest} {
		if d != "" && !strings.HasPrefix(d, "none") && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}
