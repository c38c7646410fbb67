package telemetry

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// buildResource is the one resource of traces, metrics and logs alike, so
// a backend can join them on any of its attributes. From weakest to
// strongest: what the SDK's detectors find about the machine and the
// process, pi-otel's own name, version and instance, the configured
// attributes (OTEL_RESOURCE_ATTRIBUTES, --resource-attributes, and the
// user and team), and last extra.
func buildResource(ctx context.Context, cfg Config, extra *resource.Resource) (*resource.Resource, error) {
	attrs := detected(ctx)
	attrs = append(attrs, semconv.ServiceName(cfg.ServiceName))
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, semconv.ServiceVersion(cfg.ServiceVersion))
	}
	attrs = append(attrs, cfg.ResourceAttributes...)
	if !slices.ContainsFunc(cfg.ResourceAttributes, func(kv attribute.KeyValue) bool { return kv.Key == semconv.ServiceInstanceIDKey }) {
		// One metric stream per process: see the package comment.
		attrs = append(attrs, semconv.ServiceInstanceID(newInstanceID()))
	}
	// Later keys win, as the order above says.
	res := resource.NewWithAttributes(vocab.SchemaURL, attrs...)
	if extra == nil {
		return res, nil
	}
	merged, err := resource.Merge(res, extra)
	if err != nil && !errors.Is(err, resource.ErrSchemaURLConflict) {
		return nil, fmt.Errorf("building the resource: %w", err)
	}
	// A schema conflict still yields every attribute, without a schema.
	return merged, nil
}

// detected runs the SDK's own detectors: host.name, os.type and
// os.description, process.runtime.* and telemetry.sdk.*. They declare
// the SDK's newer schema, which would conflict with v1.41's on a merge
// and leave the resource with none; the names they set are the same in
// v1.41 (a test checks), so their attributes are taken under v1.41's.
// WithFromEnv is not among them: internal/config reads
// OTEL_RESOURCE_ATTRIBUTES once, with its flag, and reports a bad value.
// A detector that fails (no hostname) leaves out what it could not find.
func detected(ctx context.Context) []attribute.KeyValue {
	res, _ := resource.New(ctx,
		resource.WithHost(),
		resource.WithOS(),
		resource.WithProcessRuntimeName(),
		resource.WithProcessRuntimeVersion(),
		resource.WithProcessRuntimeDescription(),
		resource.WithTelemetrySDK(),
	)
	// service.name is the SDK's default, unknown_service:…; ours follows.
	return slices.DeleteFunc(res.Attributes(), func(kv attribute.KeyValue) bool { return kv.Key == semconv.ServiceNameKey })
}

// newInstanceID is a random (version 4) UUID, as the convention suggests
// for service.instance.id.
func newInstanceID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
