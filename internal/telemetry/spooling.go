package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/telemetry/otlpfile"
	"github.com/pi-otel/pi-otel/internal/telemetry/spool"
)

// startSpool opens the spool and, in the background, sends what earlier
// processes left in it. A spool that cannot be opened is reported once
// and left out: pi-otel works without it.
func (t *Pipeline) startSpool(cfg config.Spool, client otlptrace.Client) {
	if cfg.Dir == "" {
		return
	}
	sp, err := spool.Open(spool.Config{Dir: cfg.Dir, MaxBytes: cfg.MaxBytes, MaxAge: cfg.MaxAge,
		Corrupt: func(path string, err error) {
			t.rep.once("spool corrupt "+path, fmt.Sprintf("spool file %s is damaged (%v): set aside, its spans are not sent", path, err))
		}})
	if err != nil {
		t.rep.once("spool", err.Error()+"; undelivered spans will not be kept")
		return
	}
	t.spool = sp
	ctx, cancel := context.WithCancel(context.Background())
	t.spoolStop, t.spoolDone = cancel, make(chan struct{})
	go func() {
		defer close(t.spoolDone)
		_ = sp.Drain(ctx, func(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) error {
			err := client.UploadTraces(ctx, req.GetResourceSpans())
			if permanent(err) {
				return nil // the collector will never take it: let it go
			}
			return err
		})
	}()
}

// SpoolCorrupt counts the damaged spool files set aside so far.
func (t *Pipeline) SpoolCorrupt() int64 {
	if t.spool == nil {
		return 0
	}
	return t.spool.Stats().Corrupt
}

// stopSpool waits, within ctx, for the spool's sending to finish.
func (t *Pipeline) stopSpool(ctx context.Context) {
	if t.spoolDone == nil {
		return
	}
	select {
	case <-t.spoolDone:
	case <-ctx.Done():
	}
	t.spoolStop()
	<-t.spoolDone
}

// keep spools a batch the collector could not take now. A batch it
// refused outright would be refused again, so it is not kept.
func (t *Pipeline) keep(batch []sdktrace.ReadOnlySpan, err error) bool {
	if permanent(err) {
		return false
	}
	return t.spool.Put(otlpfile.TraceRequest(batch)) == nil
}

// permanent reports a gRPC refusal that no retry can change.
func permanent(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.Unauthenticated, codes.PermissionDenied, codes.Unimplemented:
		return true
	}
	return false
}
