// Package config turns pi-otel's command-line flags and environment variables
// into one Config value.
//
// Every setting is both a flag and an environment variable; a flag given on the
// command line wins over the environment, which wins over the default. The
// OpenTelemetry variables (OTEL_*) keep the meaning the OpenTelemetry
// specification gives them; pi-otel's own variables start with PI_OTEL_.
//
// Which exporter runs when none is named: --traces-exporter defaults to "file"
// when --traces-file (PI_OTEL_TRACES_FILE) is given, else to "otlp" when an
// OTLP endpoint is set (flag or OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT), else to
// "console", so that someone trying pi-otel without a collector still sees the
// trace as a tree on stderr. --metrics-exporter follows the same rule but ends
// at "none" instead of "console", because a metrics dump on stderr is noise
// unless asked for. --logs-exporter ends at "none" too, and only its own
// endpoint (--logs-endpoint, OTEL_EXPORTER_OTLP_LOGS_ENDPOINT) turns it to
// "otlp": a collector reached for traces may have no logs pipeline.
//
// Endpoints follow the OTLP exporter specification. For http/protobuf an
// endpoint given through the generic setting (--endpoint,
// OTEL_EXPORTER_OTLP_ENDPOINT) gets the signal path (/v1/traces, /v1/metrics, /v1/logs)
// appended, while a signal-specific one (--traces-endpoint,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and the metrics twins) is used as is.
// The scheme decides transport security: http:// is plaintext, https:// is
// TLS. An endpoint without a scheme ("collector:4317") is plaintext when
// --insecure (OTEL_EXPORTER_OTLP_[TRACES_]INSECURE) is true or the host is a
// loopback address, TLS otherwise; a missing port becomes 4317 for grpc and
// 4318 for http/protobuf.
//
// Durations are Go durations ("5s", "250ms") or, as in the OTEL_* variables,
// a plain number of milliseconds.
//
// OTEL_SEMCONV_STABILITY_OPT_IN (--semconv-stability-opt-in) is the
// conventions' own comma-separated list; pi-otel acts on
// gen_ai_latest_experimental and leaves the other entries to other
// instrumentations.
//
// PI_OTEL_REDACT holds one regular expression per line. A single line can
// still hold several patterns joined with "|".
package config

import (
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

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

// GenAILatestOptIn is the OTEL_SEMCONV_STABILITY_OPT_IN entry that selects
// the latest GenAI conventions.
const GenAILatestOptIn = "gen_ai_latest_experimental"

// Defaults other packages use without loading. The settings table is
// where Load takes every default from; a test holds these equal to it.
const (
	DefaultMaxContentLength = 4096
	DefaultOTLPTimeout      = 10 * time.Second
)

// Spool bounds the on-disk spool of undelivered spans.
type Spool struct {
	Dir      string // "" turns the spool off
	MaxBytes int64
	MaxAge   time.Duration
}

// Config is everything pi-otel needs to set up its telemetry.
type Config struct {
	Traces  Signal
	Metrics Signal
	// Logs carries Pi's events as OTLP log records (off unless asked for).
	Logs Signal
	// Warnings name environment values that were ignored (see Load).
	Warnings []string
	// Spool keeps spans an OTLP export could not deliver before exit, for
	// the next pi-otel process to send.
	Spool Spool

	// MetricsInterval is the period of the periodic metric reader.
	MetricsInterval time.Duration
	// Temporality is the temporality preference of the metric exporters.
	Temporality Temporality

	// ServiceName is service.name; it wins over a service.name in
	// ResourceAttributes.
	ServiceName string
	// ResourceAttributes are the other resource attributes, sorted by key.
	ResourceAttributes []attribute.KeyValue

	// Quiet silences pi-otel's own status lines on stderr (the exit
	// summary and export warnings). It does not silence the console
	// exporter, which the user chose.
	Quiet bool
	// NoColor is true when NO_COLOR is set to anything non-empty.
	NoColor bool
	// FlushTimeout bounds the export of what is left at exit.
	FlushTimeout time.Duration

	// CaptureContent lets prompts, tool arguments and outputs into
	// telemetry. Off by default.
	CaptureContent bool
	// MaxContentLength bounds each captured content value, in bytes.
	MaxContentLength int
	// AttributeValueLengthLimit cuts every string attribute value (and
	// each element of a string slice) of spans and span events to this
	// many characters, as OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT asks. 0 means
	// no limit.
	AttributeValueLengthLimit int
	// Redact holds extra regular expressions (RE2) whose matches are
	// removed from captured content. Each one compiles.
	Redact []string

	// Batch configures the span batching between producer and exporter.
	Batch Batch

	// GenAILatest selects the latest GenAI semantic conventions (after
	// v1.41) for what leaves the process: OTEL_SEMCONV_STABILITY_OPT_IN
	// holds gen_ai_latest_experimental. Off, the v1.41 names.
	GenAILatest bool
	// Propagation says what trace context the processes of Pi's bash
	// calls get (PropagateCall or PropagateRun); PropagationWait bounds a
	// bash call's wait for its call's context, and PropagationDir is the
	// private directory it is handed through ("" for the default).
	Propagation     string
	PropagationWait time.Duration
	PropagationDir  string
	// MemoryLimit is the soft heap limit in bytes asked for with
	// --memory-limit; 0 when not given, -1 for off. pi-otel checks it,
	// unlike GOMEMLIMIT, which the Go runtime reads (and aborts on) before
	// pi-otel starts.
	MemoryLimit int64
}

// The values of Propagation.
const (
	PropagateCall = "call"
	PropagateRun  = "run"
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

// Batch mirrors the OTEL_BSP_* settings of the batch span processor.
type Batch struct {
	MaxQueueSize       int
	MaxExportBatchSize int
	ScheduleDelay      time.Duration
	ExportTimeout      time.Duration
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
