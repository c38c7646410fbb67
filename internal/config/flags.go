package config

import (
	"flag"
	"strings"
)

// flagDef is one command-line flag. Load does the parsing, so every flag
// only records the text it was given; that keeps flag and environment values
// on one parsing path with one set of error messages.
type flagDef struct {
	name    string
	usage   string
	boolean bool
	repeat  bool
}

var flagDefs = []flagDef{
	{name: "traces-exporter", usage: "where spans go: otlp, console, file or none, an `EXPORTER` (OTEL_TRACES_EXPORTER; default: file if --traces-file is set, otlp if an endpoint is set, else console)"},
	{name: "traces-file", usage: "write spans as OTLP/JSON lines to `PATH`, appending; - means stderr (PI_OTEL_TRACES_FILE)"},
	{name: "traces-endpoint", usage: "OTLP endpoint `URL` for spans, used as is (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)"},
	{name: "traces-protocol", usage: "OTLP `PROTOCOL` for spans: grpc or http/protobuf (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)"},

	{name: "metrics-exporter", usage: "where metrics go: otlp, console, file or none, an `EXPORTER` (OTEL_METRICS_EXPORTER; default: file if --metrics-file is set, otlp if an endpoint is set, else none)"},
	{name: "metrics-file", usage: "write metrics as OTLP/JSON lines to `PATH`, appending; - means stderr (PI_OTEL_METRICS_FILE)"},
	{name: "metrics-endpoint", usage: "OTLP endpoint `URL` for metrics, used as is (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)"},
	{name: "metrics-protocol", usage: "OTLP `PROTOCOL` for metrics: grpc or http/protobuf (OTEL_EXPORTER_OTLP_METRICS_PROTOCOL)"},
	{name: "metrics-interval", usage: "metric export period, a `DURATION` (OTEL_METRIC_EXPORT_INTERVAL; default 60s; metrics are also flushed at exit)"},
	{name: "metrics-temporality", usage: "metric `TEMPORALITY`: delta, cumulative or lowmemory (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE; default cumulative)"},

	{name: "logs-exporter", usage: "where Pi's events go as log records: otlp, console, file or none, an `EXPORTER` (OTEL_LOGS_EXPORTER; default: file if --logs-file is set, otlp if --logs-endpoint is set, else none)"},
	{name: "logs-file", usage: "write log records as OTLP/JSON lines to `PATH`, appending; - means stderr (PI_OTEL_LOGS_FILE)"},
	{name: "logs-endpoint", usage: "OTLP endpoint `URL` for log records, used as is (OTEL_EXPORTER_OTLP_LOGS_ENDPOINT)"},
	{name: "logs-protocol", usage: "OTLP `PROTOCOL` for log records: grpc or http/protobuf (OTEL_EXPORTER_OTLP_LOGS_PROTOCOL)"},

	{name: "endpoint", usage: "OTLP endpoint `URL` for all signals; http/protobuf appends /v1/traces, /v1/metrics or /v1/logs (OTEL_EXPORTER_OTLP_ENDPOINT; default http://localhost:4317 for grpc, http://localhost:4318 for http/protobuf)"},
	{name: "protocol", usage: "OTLP `PROTOCOL`: grpc or http/protobuf (OTEL_EXPORTER_OTLP_PROTOCOL; default grpc)"},
	{name: "headers", usage: "OTLP headers as `K=V,...`, values percent-encoded (OTEL_EXPORTER_OTLP_HEADERS)"},
	{name: "insecure", boolean: true, usage: "plaintext to an endpoint given without a scheme (OTEL_EXPORTER_OTLP_INSECURE)"},
	{name: "certificate", usage: "PEM file of CA certificates to trust, a `PATH` (OTEL_EXPORTER_OTLP_CERTIFICATE)"},
	{name: "client-certificate", usage: "PEM file with the client certificate for mutual TLS, a `PATH` (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE)"},
	{name: "client-key", usage: "PEM file with the client key for mutual TLS, a `PATH` (OTEL_EXPORTER_OTLP_CLIENT_KEY)"},
	{name: "timeout", usage: "bound on one OTLP export, a `DURATION` (OTEL_EXPORTER_OTLP_TIMEOUT; default 10s)"},
	{name: "compression", usage: "OTLP `COMPRESSION`: gzip or none (OTEL_EXPORTER_OTLP_COMPRESSION; default none)"},

	{name: "service-name", usage: "service.name of the telemetry, a `NAME` (OTEL_SERVICE_NAME; default pi)"},
	{name: "resource-attributes", usage: "extra resource attributes as `K=V,...` (OTEL_RESOURCE_ATTRIBUTES)"},

	{name: "quiet", boolean: true, usage: "no pi-otel status lines on stderr (PI_OTEL_QUIET)"},
	{name: "flush-timeout", usage: "how long to wait at exit for telemetry to be exported, a `DURATION` (PI_OTEL_FLUSH_TIMEOUT; default 5s)"},

	{name: "capture-content", boolean: true, usage: "record prompts, tool arguments and outputs, redacted (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT; default off)"},
	{name: "max-content-length", usage: "keep at most `N` bytes of each captured value; 0 means no limit (PI_OTEL_MAX_CONTENT_LENGTH; default 4096)"},
	{name: "attribute-value-length-limit", usage: "cut every attribute value, of spans and span events, to `N` characters; 0 means no limit (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT; default no limit)"},
	{name: "redact", repeat: true, usage: "also redact matches of `REGEX` in captured content and in names (project, model, provider, tool); repeatable (PI_OTEL_REDACT, one per line)"},

	{name: "semconv-stability-opt-in", usage: "semantic conventions opt-in, a comma-separated `LIST`: gen_ai_latest_experimental sends the latest GenAI names instead of v1.41's (OTEL_SEMCONV_STABILITY_OPT_IN; default v1.41)"},

	{name: "spool-dir", usage: "keep spans an OTLP export could not deliver by exit in `DIR`, for the next pi-otel to send; none turns it off (PI_OTEL_SPOOL_DIR; default $XDG_STATE_HOME/pi-otel/spool or ~/.local/state/pi-otel/spool)"},
	{name: "spool-max-size", usage: "bound on the spool in mebibytes, `N`; the oldest spans go first (PI_OTEL_SPOOL_MAX_SIZE; default 64)"},
	{name: "spool-max-age", usage: "spooled spans older than this `DURATION` are dropped (PI_OTEL_SPOOL_MAX_AGE; default 168h)"},

	{name: "queue-size", usage: "spans buffered for export before new ones are dropped, `N` (OTEL_BSP_MAX_QUEUE_SIZE; default 2048)"},
	{name: "max-export-batch-size", usage: "spans per export, `N` (OTEL_BSP_MAX_EXPORT_BATCH_SIZE; default 512)"},
	{name: "schedule-delay", usage: "longest wait before queued spans are exported, a `DURATION` (OTEL_BSP_SCHEDULE_DELAY; default 5s)"},
	{name: "export-timeout", usage: "bound on exporting one batch, retries included, a `DURATION` (OTEL_BSP_EXPORT_TIMEOUT; default 30s)"},
	{name: "memory-limit", usage: "soft limit on pi-otel's own heap, a `SIZE` in B, KiB, MiB or GiB (such as 64MiB), or off (PI_OTEL_MEMORY_LIMIT; default 32MiB, or GOMEMLIMIT's when that is set)"},
}

// RegisterFlags defines pi-otel's telemetry flags on fs. Load reads back the
// ones that were given.
func RegisterFlags(fs *flag.FlagSet) { register(fs, flagDefs) }

// register defines defs on fs; Load and LoadWatch read them back through
// newSources.
func register(fs *flag.FlagSet, defs []flagDef) {
	for _, d := range defs {
		if d.repeat {
			fs.Var(new(listValue), d.name, d.usage)
			continue
		}
		fs.Var(&textValue{boolean: d.boolean}, d.name, d.usage)
	}
}

// textValue records a flag's text as given.
type textValue struct {
	text    string
	boolean bool
}

func (v *textValue) String() string {
	if v == nil {
		return ""
	}
	return v.text
}

func (v *textValue) Set(s string) error { v.text = s; return nil }

// IsBoolFlag lets "--quiet" stand for "--quiet=true".
func (v *textValue) IsBoolFlag() bool { return v.boolean }

// listValue records every occurrence of a repeatable flag.
type listValue []string

func (v *listValue) String() string {
	if v == nil {
		return ""
	}
	return strings.Join(*v, "\n")
}

func (v *listValue) Set(s string) error { *v = append(*v, s); return nil }
