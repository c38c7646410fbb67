package telemetry

import (
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pi-otel/pi-otel/internal/config"
)

// Config is the pipeline's configuration. As in the Collector, the
// component owns its Config; the command line's settings are mapped onto
// it by the command (internal/app). Its value types (Signal, Batch,
// Temporality) are internal/config's, shared as the Collector's
// components share configgrpc and configretry.
type Config struct {
	// ServiceName is service.name; it wins over one in ResourceAttributes.
	ServiceName string
	// ServiceVersion is pi-otel's service.version; empty or "dev" takes
	// the module's version from the build, if any.
	ServiceVersion     string
	ResourceAttributes []attribute.KeyValue

	Traces, Metrics config.Signal
	// Logs is where log records go; off (none) unless set.
	Logs config.Signal
	// Batch configures the span queue between the producer and the exporter.
	Batch config.Batch
	// MetricsInterval is the period of the periodic metric reader.
	MetricsInterval time.Duration
	Temporality     config.Temporality
	// FlushTimeout bounds Shutdown's export of what is left; zero means do
	// not wait.
	FlushTimeout time.Duration

	// Quiet silences the warnings on stderr (not the console exporter).
	Quiet bool
	// NoColor turns colour off in the console tree.
	NoColor bool

	// Redact holds the user's extra redaction patterns (RE2), applied with
	// the built-in rules to span names and the attributes that carry names.
	Redact []string

	// AttributeValueLengthLimit cuts every attribute value (0: no limit).
	AttributeValueLengthLimit int
	// Spool keeps what OTLP could not deliver by exit for the next process.
	Spool config.Spool
}

// withDefaults fills in settings a hand-made Config left at zero with the
// command line's defaults. A zero FlushTimeout stays: it means "do not
// wait at exit".
func withDefaults(cfg Config) Config {
	d := config.Default()
	if cfg.Batch.MaxQueueSize <= 0 {
		cfg.Batch.MaxQueueSize = d.Batch.MaxQueueSize
	}
	if cfg.Batch.MaxExportBatchSize <= 0 {
		cfg.Batch.MaxExportBatchSize = d.Batch.MaxExportBatchSize
	}
	cfg.Batch.MaxExportBatchSize = min(cfg.Batch.MaxExportBatchSize, cfg.Batch.MaxQueueSize)
	if cfg.Batch.ScheduleDelay <= 0 {
		cfg.Batch.ScheduleDelay = d.Batch.ScheduleDelay
	}
	if cfg.Batch.ExportTimeout <= 0 {
		cfg.Batch.ExportTimeout = d.Batch.ExportTimeout
	}
	if cfg.MetricsInterval <= 0 {
		cfg.MetricsInterval = d.MetricsInterval
	}
	if cfg.Temporality == "" {
		cfg.Temporality = d.Temporality
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = d.ServiceName
	}
	for _, sig := range []struct {
		s    *config.Signal
		path string
	}{{&cfg.Traces, "/v1/traces"}, {&cfg.Metrics, "/v1/metrics"}, {&cfg.Logs, "/v1/logs"}} {
		o := &sig.s.OTLP
		if o.Protocol == "" {
			o.Protocol = config.ProtocolGRPC
		}
		if o.Endpoint == "" {
			o.Endpoint = "http://localhost:4317"
			if o.Protocol == config.ProtocolHTTPProtobuf {
				o.Endpoint = "http://localhost:4318" + sig.path
			}
		}
		if o.Timeout <= 0 {
			o.Timeout = config.DefaultOTLPTimeout
		}
		if sig.s.Exporter == "" {
			sig.s.Exporter = config.ExporterNone
		}
	}
	return cfg
}
