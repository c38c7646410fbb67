package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
	"github.com/pi-otel/pi-otel/internal/telemetry/spool"
)

// startSpool opens the spool and, in the background, sends what earlier
// processes left in it, and again whenever the collector takes a batch
// while spans wait in the spool: a long-running watch must not hold an
// outage's spans until its next start. A spool that cannot be opened is
// reported once and left out: pi-otel works without it.
func (t *Pipeline) startSpool(cfg Spool, client otlptrace.Client, retry time.Duration) {
	if cfg.Dir == "" {
		return
	}
	sp, err := spool.Open(spool.Config{Dir: cfg.Dir, MaxBytes: cfg.MaxBytes, MaxAge: cfg.MaxAge,
		Corrupt: func(path string, err error) {
			t.rep.once("spool corrupt "+path, fmt.Sprintf("spool file %s is damaged (%v): set aside, its spans are not sent", path, err))
		},
		Expired: func(n int64, age time.Duration) {
			t.rep.once("spool expired", fmt.Sprintf("%s spooled %s ago, past --spool-max-age %s, dropped from %s unsent (the summary counts all)",
				plural(n, "span"), age.Round(time.Minute), cfg.MaxAge, cfg.Dir))
		}})
	if err != nil {
		t.rep.once("spool", err.Error()+"; undelivered spans will not be kept")
		return
	}
	t.spool = sp
	t.spoolWaiting.Store(true) // what earlier processes left
	t.spoolKick, t.spoolEnding = make(chan struct{}, 1), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	t.spoolStop, t.spoolDone = cancel, make(chan struct{})
	retry = cmp.Or(max(retry, 0), spoolRetry)
	upload := func(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) error {
		err := client.UploadTraces(ctx, req.GetResourceSpans())
		switch {
		case refused(err):
			return fmt.Errorf("%w: %w", spool.ErrRefused, err)
		case permanent(err):
			return nil // the collector will never take it: let it go
		}
		return err
	}
	go func() {
		defer close(t.spoolDone)
		tick := time.NewTicker(retry)
		defer tick.Stop()
		for {
			if t.spoolWaiting.Load() {
				t.spoolWaiting.Store(false) // a Put from now on sets it again
				if err := sp.Drain(ctx, upload); err != nil {
					t.spoolWaiting.Store(true) // still away: try again later
				}
			}
			select {
			case <-t.spoolEnding:
				return
			case <-t.spoolKick:
			case <-tick.C:
			}
		}
	}()
}

// SpoolStats counts what went through the spool so far; zero without one.
func (t *Pipeline) SpoolStats() spool.Stats {
	if t.spool == nil {
		return spool.Stats{}
	}
	return t.spool.Stats()
}

// spoolRetry is how often the spool is tried while spans wait in it and
// nothing else reaches the collector.
const spoolRetry = 10 * time.Second

// spoolDelivered is told of every batch the collector took: if spans wait
// in the spool, it is sent now. It wakes the sender whether or not
// spoolWaiting is set: while a send is under way the flag is clear, and
// if that send fails (it began before the collector came back), only
// this wake-up has it tried again now rather than at the next tick.
func (t *Pipeline) spoolDelivered() {
	select {
	case t.spoolKick <- struct{}{}:
	default:
	}
}

// stopSpool waits, within ctx, for the spool's sending in progress to
// finish, and ends it.
func (t *Pipeline) stopSpool(ctx context.Context) {
	if t.spoolDone == nil {
		return
	}
	close(t.spoolEnding)
	select {
	case <-t.spoolDone:
	case <-ctx.Done():
	}
	t.spoolStop()
	<-t.spoolDone
}

// abortSpool ends the spool's send in progress at once, at an exit that
// finds no collector: the file being sent goes back to the spool, for
// the next process.
func (t *Pipeline) abortSpool() {
	if t.spoolStop != nil {
		t.spoolStop()
	}
}

// keep spools a batch the collector could not take now. A batch it
// refused outright would be refused again, so it is not kept. A batch the
// spool cannot take (full, or not writable) stays failed: in watch its
// runs are traced again later, from the committed place.
func (t *Pipeline) keep(batch []sdktrace.ReadOnlySpan, err error) bool {
	if permanent(err) {
		return false
	}
	if err := t.spool.Put(otlpfile.TraceRequest(batch)); err != nil {
		if errors.Is(err, spool.ErrFull) {
			t.rep.once("spool full", err.Error()+": batches the collector does not take now are not kept, and count as failed; "+
				"nothing spooled is deleted, and the spool takes batches again as the collector takes what it holds (--spool-max-size)")
		} else {
			t.rep.once("spool put", fmt.Sprintf("writing to the spool %s failed (%v): batches the collector does not take now are not kept, and count as failed",
				t.spool.Dir(), err))
		}
		return false
	}
	t.spoolWaiting.Store(true)
	return true
}

// permanent reports a refusal that no retry can change.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.Unauthenticated, codes.PermissionDenied, codes.Unimplemented:
		return true
	}
	return refused(err)
}

// refused reports a collector that refused the data itself (gRPC
// InvalidArgument, HTTP 400): it would refuse it again, whatever is fixed
// on either side, so the spans are counted lost and not traced again. A
// refusal of the client (authentication, a wrong path) is not one: once
// the collector is fixed, the same runs go through.
func refused(err error) bool {
	if err == nil {
		return false
	}
	var hs *httpStatusError
	return status.Code(err) == codes.InvalidArgument || (errors.As(err, &hs) && hs.code == http.StatusBadRequest)
}
