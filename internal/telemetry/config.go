package telemetry

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Config is the pipeline's configuration. As in the Collector, the
// component owns its Config and the value types in it; internal/config
// loads the command line's settings into it (config.Config embeds it),
// so nothing is copied across.
type Config struct {
	// ServiceName is service.name; it wins over a service.name in
	// ResourceAttributes.
	ServiceName string
	// ServiceVersion is pi-otel's service.version (internal/buildinfo);
	// empty leaves it out.
	ServiceVersion string
	// ResourceAttributes are the other resource attributes, sorted by key.
	// They hold enduser.id and pi.team when the user and team are set.
	ResourceAttributes []attribute.KeyValue

	Traces, Metrics Signal
	// Logs carries Pi's events as OTLP log records (off, none, unless set).
	Logs Signal
	// Batch configures the span queue between the producer and the exporter.
	Batch Batch
	// MetricsInterval is the period of the periodic metric reader.
	MetricsInterval time.Duration
	// Temporality is the temporality preference of the metric exporters.
	Temporality Temporality
	// FlushTimeout bounds Shutdown's export of what is left; zero means do
	// not wait.
	FlushTimeout time.Duration

	// Quiet silences pi-otel's own status lines on stderr (the exit
	// summary and export warnings). It does not silence the console
	// exporter, which the user chose.
	Quiet bool
	// NoColor turns colour off in the console tree (NO_COLOR set).
	NoColor bool

	// Redact holds the user's extra redaction patterns (RE2), each one
	// compiled: applied with the built-in rules to span names and the
	// attributes that carry names, and to captured content.
	Redact []string

	// AttributeValueLengthLimit cuts every string attribute value (and
	// each element of a string slice) of spans and span events to this
	// many characters, as OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT asks. 0 means
	// no limit.
	AttributeValueLengthLimit int
	// Spool keeps spans an OTLP export could not deliver by exit, for the
	// next pi-otel process to send.
	Spool Spool
}

// ExporterKind names where a signal goes.
type ExporterKind string

// The exporters pi-otel knows.
const (
	ExporterOTLP    ExporterKind = "otlp"
	ExporterConsole ExporterKind = "console"
	ExporterFile    ExporterKind = "file"
	ExporterNone    ExporterKind = "none"
)

// Protocol is an OTLP transport.
type Protocol string

// The OTLP transports pi-otel speaks.
const (
	ProtocolGRPC         Protocol = "grpc"
	ProtocolHTTPProtobuf Protocol = "http/protobuf"
)

// Temporality is the metrics temporality preference, as in
// OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE.
type Temporality string

// The temporality preferences of the OTLP metrics exporter specification.
const (
	TemporalityDelta      Temporality = "delta"
	TemporalityCumulative Temporality = "cumulative"
	TemporalityLowMemory  Temporality = "lowmemory"
)

// Signal says where one signal goes.
type Signal struct {
	Exporter ExporterKind
	// File is the output path of the file exporter; "-" means stderr.
	File string
	// OTLP holds the OTLP settings. It is filled in even when Exporter is
	// not otlp.
	OTLP OTLP
}

// OTLP holds the settings of one OTLP exporter.
type OTLP struct {
	Protocol Protocol
	// Endpoint is an absolute http:// or https:// URL. For grpc only its
	// host and port count; for http/protobuf it is the URL to POST to.
	Endpoint string
	// EndpointFrom names where Endpoint came from ("--endpoint",
	// "OTEL_EXPORTER_OTLP_ENDPOINT"), for messages; "" is the default.
	EndpointFrom string
	// Headers are sent with every export. Never print their values.
	Headers map[string]string
	// Certificate is a PEM file of CA certificates to trust.
	Certificate string
	// ClientCertificate and ClientKey are PEM files for mutual TLS.
	ClientCertificate string
	ClientKey         string
	// Timeout bounds each export call.
	Timeout time.Duration
	// Compression is "gzip" or "none".
	Compression string
}

// Insecure reports whether the endpoint is plaintext.
func (o OTLP) Insecure() bool { return strings.HasPrefix(o.Endpoint, "http://") }

// Target names the endpoint for people: host:port for grpc, the URL for
// http/protobuf, with any password hidden. It never includes headers.
func (o OTLP) Target() string {
	u, err := url.Parse(o.Endpoint)
	if err != nil {
		return ""
	}
	if o.Protocol == ProtocolGRPC {
		return u.Host
	}
	return u.Redacted()
}

// Batch mirrors the OTEL_BSP_* settings of the batch span processor.
type Batch struct {
	MaxQueueSize       int
	MaxExportBatchSize int
	ScheduleDelay      time.Duration
	ExportTimeout      time.Duration
}

// Spool bounds the on-disk spool of undelivered spans.
type Spool struct {
	Dir      string // "" turns the spool off
	MaxBytes int64
	MaxAge   time.Duration
}

// DefaultOTLPTimeout bounds one OTLP export when nothing else is set.
const DefaultOTLPTimeout = 10 * time.Second

// Defaults are the settings a hand-made Config left at zero gets (Setup
// fills them in). internal/config's table of settings states the same
// defaults for the command line; a test there holds the two equal.
func Defaults() Config {
	return Config{
		ServiceName:     "pi",
		Batch:           Batch{MaxQueueSize: 2048, MaxExportBatchSize: 512, ScheduleDelay: 5 * time.Second, ExportTimeout: 30 * time.Second},
		MetricsInterval: time.Minute,
		Temporality:     TemporalityCumulative,
	}
}

// withDefaults fills in settings a hand-made Config left at zero with
// Defaults. A zero FlushTimeout stays: it means "do not
// wait at exit".
func withDefaults(cfg Config) Config {
	// A number below 1 takes the default, as does an empty name.
	d := Defaults()
	b := &cfg.Batch
	b.MaxQueueSize = cmp.Or(max(b.MaxQueueSize, 0), d.Batch.MaxQueueSize)
	b.MaxExportBatchSize = cmp.Or(max(b.MaxExportBatchSize, 0), d.Batch.MaxExportBatchSize)
	b.MaxExportBatchSize = min(b.MaxExportBatchSize, b.MaxQueueSize)
	b.ScheduleDelay = cmp.Or(max(b.ScheduleDelay, 0), d.Batch.ScheduleDelay)
	b.ExportTimeout = cmp.Or(max(b.ExportTimeout, 0), d.Batch.ExportTimeout)
	cfg.MetricsInterval = cmp.Or(max(cfg.MetricsInterval, 0), d.MetricsInterval)
	cfg.Temporality = cmp.Or(cfg.Temporality, d.Temporality)
	cfg.ServiceName = cmp.Or(cfg.ServiceName, d.ServiceName)
	for _, sig := range []struct {
		s    *Signal
		path string
	}{{&cfg.Traces, "/v1/traces"}, {&cfg.Metrics, "/v1/metrics"}, {&cfg.Logs, "/v1/logs"}} {
		o := &sig.s.OTLP
		o.Protocol = cmp.Or(o.Protocol, ProtocolGRPC)
		if o.Endpoint == "" {
			o.Endpoint = "http://localhost:4317"
			if o.Protocol == ProtocolHTTPProtobuf {
				o.Endpoint = "http://localhost:4318" + sig.path
			}
		}
		o.Timeout = cmp.Or(max(o.Timeout, 0), DefaultOTLPTimeout)
		sig.s.Exporter = cmp.Or(sig.s.Exporter, ExporterNone)
	}
	return cfg
}

// Validate reports every setting out of its range, as the Collector asks
// of a component's Config before it builds the component. A zero value is
// valid: Setup fills it in with Defaults.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, s := range []struct {
		name string
		sig  Signal
	}{{"traces", c.Traces}, {"metrics", c.Metrics}, {"logs", c.Logs}} {
		switch s.sig.Exporter {
		case "", ExporterNone, ExporterConsole, ExporterOTLP:
		case ExporterFile:
			if s.sig.File == "" {
				bad("%s: the file exporter needs a file", s.name)
			}
		default:
			bad("%s: unknown exporter %q", s.name, s.sig.Exporter)
		}
		switch o := s.sig.OTLP; {
		case o.Protocol != "" && o.Protocol != ProtocolGRPC && o.Protocol != ProtocolHTTPProtobuf:
			bad("%s: unknown OTLP protocol %q", s.name, o.Protocol)
		case o.Compression != "" && o.Compression != "gzip" && o.Compression != "none":
			bad("%s: unknown OTLP compression %q", s.name, o.Compression)
		case o.Timeout < 0:
			bad("%s: negative OTLP timeout %s", s.name, o.Timeout)
		}
	}
	switch c.Temporality {
	case "", TemporalityCumulative, TemporalityDelta, TemporalityLowMemory:
	default:
		bad("unknown metrics temporality %q", c.Temporality)
	}
	if c.Batch.MaxQueueSize < 0 || c.Batch.MaxExportBatchSize < 0 || c.Batch.ScheduleDelay < 0 || c.Batch.ExportTimeout < 0 {
		bad("negative batch setting %+v", c.Batch)
	}
	if c.MetricsInterval < 0 || c.FlushTimeout < 0 || c.AttributeValueLengthLimit < 0 {
		bad("negative metrics interval, flush timeout or attribute length limit")
	}
	if c.Spool.MaxBytes < 0 || c.Spool.MaxAge < 0 {
		bad("negative spool bound %+v", c.Spool)
	}
	return errors.Join(errs...)
}
