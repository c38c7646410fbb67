package config

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/pi-otel/pi-otel/internal/telemetry"
)

// setting is one row of the settings table: everything pi-otel knows about
// a setting is here, once. The loader reads its flag, variables, default
// and parser from the row, and help and docs/configuration.md are generated
// from the same row.
type setting struct {
	flag  string
	group string
	// envs are the environment variables that stand for the flag, in
	// precedence order.
	envs []string
	// usage says what the setting does; a `PLACEHOLDER` in backquotes
	// names its value, as package flag has it.
	usage string
	// def is the default in the parser's syntax; the loader starts from
	// it. defText states a default the loader works out instead (such as
	// "file if --traces-file is set, ...").
	def, defText string
	// note is said after the default.
	note  string
	parse parser
	// choices are the values an asChoice setting takes, lower case.
	choices []string
	// floor is the least an asDuration or asPositive setting takes
	// (asDuration: besides 0). Settings that set how often something
	// runs have one: a nanosecond is accepted by the parser and makes
	// the loop spin on a core.
	floor time.Duration
}

// parser says how the loader reads a setting's text.
type parser int

const (
	// asText is the text as given, read by the setting's own code.
	asText parser = iota
	// asList is a repeatable flag, one entry per line in its variable.
	asList
	asBool
	// asCount is a whole number of at least 1, asLength of at least 0.
	asCount
	asLength
	// asDuration is a duration of 0 or more, asPositive above 0.
	asDuration
	asPositive
	// asChoice is one of choices, in any case.
	asChoice
	// asSize is a byte size such as 64MiB, or off.
	asSize
)

// least is the smallest whole number an asCount or asLength setting takes.
func (p parser) least() int {
	if p == asCount {
		return 1
	}
	return 0
}

// settings is the table of the settings every command shares, in the order
// help shows them.
var settings = []setting{
	{flag: "traces-exporter", group: GroupDestination, envs: envs("OTEL_TRACES_EXPORTER"), usage: "where spans go: otlp, console, file or none, an `EXPORTER`", defText: "file if --traces-file is set, otlp if an endpoint is set, else console", parse: asText},
	{flag: "traces-file", group: GroupDestination, envs: envs("PI_OTEL_TRACES_FILE"), usage: "write spans as OTLP/JSON lines to `PATH`, appending; - means stderr", parse: asText},
	{flag: "traces-endpoint", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), usage: "OTLP endpoint `URL` for spans, used as is", parse: asText},
	{flag: "traces-protocol", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), usage: "OTLP `PROTOCOL` for spans: grpc or http/protobuf", parse: asChoice, choices: protocols},

	{flag: "metrics-exporter", group: GroupDestination, envs: envs("OTEL_METRICS_EXPORTER"), usage: "where metrics go: otlp, console, file or none, an `EXPORTER`", defText: "file if --metrics-file is set, otlp if an endpoint is set, else none", parse: asText},
	{flag: "metrics-file", group: GroupDestination, envs: envs("PI_OTEL_METRICS_FILE"), usage: "write metrics as OTLP/JSON lines to `PATH`, appending; - means stderr", parse: asText},
	{flag: "metrics-endpoint", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), usage: "OTLP endpoint `URL` for metrics, used as is", parse: asText},
	{flag: "metrics-protocol", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"), usage: "OTLP `PROTOCOL` for metrics: grpc or http/protobuf", parse: asChoice, choices: protocols},
	// Each export collects every instrument and sends a request: more
	// often than ten times a second helps no reader of metrics.
	{flag: "metrics-interval", group: GroupTuning, envs: envs("OTEL_METRIC_EXPORT_INTERVAL"), usage: "metric export period, a `DURATION`", def: "60s", note: "metrics are also flushed at exit", parse: asPositive, floor: 100 * time.Millisecond},
	{flag: "metrics-temporality", group: GroupTuning, envs: envs("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"), usage: "metric `TEMPORALITY`: delta, cumulative or lowmemory", def: "cumulative", parse: asChoice, choices: []string{"delta", "cumulative", "lowmemory"}},

	{flag: "logs-exporter", group: GroupDestination, envs: envs("OTEL_LOGS_EXPORTER"), usage: "where Pi's events go as log records: otlp, console, file or none, an `EXPORTER`", defText: "file if --logs-file is set, otlp if --logs-endpoint is set, else none", parse: asText},
	{flag: "logs-file", group: GroupDestination, envs: envs("PI_OTEL_LOGS_FILE"), usage: "write log records as OTLP/JSON lines to `PATH`, appending; - means stderr", parse: asText},
	{flag: "logs-endpoint", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"), usage: "OTLP endpoint `URL` for log records, used as is", parse: asText},
	{flag: "logs-protocol", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"), usage: "OTLP `PROTOCOL` for log records: grpc or http/protobuf", parse: asChoice, choices: protocols},

	{flag: "endpoint", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_ENDPOINT"), usage: "OTLP endpoint `URL` for all signals; http/protobuf appends /v1/traces, /v1/metrics or /v1/logs", defText: "http://localhost:4317 for grpc, http://localhost:4318 for http/protobuf", parse: asText},
	{flag: "protocol", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_PROTOCOL"), usage: "OTLP `PROTOCOL`: grpc or http/protobuf", def: "grpc", parse: asChoice, choices: protocols},
	{flag: "headers", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_HEADERS"), usage: "OTLP headers as `K=V,...`, values percent-encoded", parse: asText},
	{flag: "insecure", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_INSECURE"), usage: "plaintext to an endpoint given without a scheme", parse: asBool},
	{flag: "certificate", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_CERTIFICATE"), usage: "PEM file of CA certificates to trust, a `PATH`", parse: asText},
	{flag: "client-certificate", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"), usage: "PEM file with the client certificate for mutual TLS, a `PATH`", parse: asText},
	{flag: "client-key", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_CLIENT_KEY"), usage: "PEM file with the client key for mutual TLS, a `PATH`", parse: asText},
	{flag: "timeout", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_TIMEOUT"), usage: "bound on one OTLP export, a `DURATION`", def: "10s", parse: asPositive},
	{flag: "compression", group: GroupOTLP, envs: envs("OTEL_EXPORTER_OTLP_COMPRESSION"), usage: "OTLP `COMPRESSION`: gzip or none", def: "none", parse: asChoice, choices: []string{"gzip", "none"}},

	{flag: "service-name", group: GroupDestination, envs: envs("OTEL_SERVICE_NAME"), usage: "service.name of the telemetry, a `NAME`", def: "pi", parse: asText},
	{flag: "resource-attributes", group: GroupDestination, envs: envs("OTEL_RESOURCE_ATTRIBUTES"), usage: "extra resource attributes as `K=V,...`", parse: asText},

	{flag: "quiet", group: GroupDestination, envs: envs("PI_OTEL_QUIET"), usage: "no pi-otel status lines on stderr", parse: asBool},
	{flag: "flush-timeout", group: GroupTuning, envs: envs("PI_OTEL_FLUSH_TIMEOUT"), usage: "how long to wait at exit for telemetry to be exported, a `DURATION`", def: "5s", parse: asDuration},

	{flag: "capture-content", group: GroupCapture, envs: envs("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), usage: "record prompts, tool arguments and outputs, redacted", defText: "off", parse: asBool},
	{flag: "max-content-length", group: GroupCapture, envs: envs("PI_OTEL_MAX_CONTENT_LENGTH"), usage: "keep at most `N` bytes of each captured value; 0 means no limit", def: "4096", parse: asLength},
	{flag: "attribute-value-length-limit", group: GroupCapture, envs: envs("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"), usage: "cut every attribute value, of spans and span events, to `N` characters; 0 means no limit", defText: "no limit", parse: asLength},
	{flag: "redact", group: GroupCapture, envs: envs("PI_OTEL_REDACT"), usage: "also redact matches of `REGEX` in captured content and in names (project, model, provider, tool, …); repeatable", note: "one per line", parse: asList},
	{flag: "user", group: GroupCapture, envs: envs("PI_OTEL_USER"), usage: "enduser.id on every signal: the `ID` a team groups spend by, such as a login; pi-otel never takes one from the system on its own", defText: "none, or enduser.id in the resource attributes", parse: asText},
	{flag: "user-pseudonym-key", group: GroupCapture, envs: envs("PI_OTEL_USER_PSEUDONYM_KEY"), usage: "without --user, set enduser.pseudo.id to a keyed hash (HMAC-SHA256) of the OS user and the host name under this secret `KEY`: stable, and not reversible without the key; off unless set", parse: asText},
	{flag: "team", group: GroupCapture, envs: envs("PI_OTEL_TEAM"), usage: "pi.team on every signal and a label of the cost and token metrics, a `NAME`", defText: "none, or pi.team in the resource attributes", parse: asText},

	{flag: "semconv-stability-opt-in", group: GroupTuning, envs: envs("OTEL_SEMCONV_STABILITY_OPT_IN"), usage: "semantic conventions opt-in, a comma-separated `LIST`: gen_ai_latest_experimental sends the latest GenAI names instead of v1.41's", defText: "v1.41", parse: asText},

	{flag: "spool-dir", group: GroupTuning, envs: envs("PI_OTEL_SPOOL_DIR"), usage: "keep spans an OTLP export could not deliver by exit in `DIR`, for the next pi-otel to send; none turns it off", defText: "$XDG_STATE_HOME/pi-otel/spool or ~/.local/state/pi-otel/spool", parse: asText},
	{flag: "spool-max-size", group: GroupTuning, envs: envs("PI_OTEL_SPOOL_MAX_SIZE"), usage: "bound on the spool in mebibytes, `N`; a full spool keeps no more batches, and deletes none", def: "64", parse: asCount},
	{flag: "spool-max-age", group: GroupTuning, envs: envs("PI_OTEL_SPOOL_MAX_AGE"), usage: "spooled spans older than this `DURATION` are dropped unsent, said and counted", def: "168h", parse: asPositive},

	{flag: "queue-size", group: GroupTuning, envs: envs("OTEL_BSP_MAX_QUEUE_SIZE"), usage: "spans buffered for export before new ones are dropped, `N`", def: "2048", parse: asCount},
	{flag: "max-export-batch-size", group: GroupTuning, envs: envs("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), usage: "spans per export, `N`", def: "512", parse: asCount},
	// schedule-delay, the timeouts and spool-max-age are waits and
	// bounds, not periods: a tiny one exports at once or gives up at
	// once, but runs nothing over and over, so it has no floor.
	{flag: "schedule-delay", group: GroupTuning, envs: envs("OTEL_BSP_SCHEDULE_DELAY"), usage: "longest wait before queued spans are exported, a `DURATION`", def: "5s", parse: asPositive},
	{flag: "export-timeout", group: GroupTuning, envs: envs("OTEL_BSP_EXPORT_TIMEOUT"), usage: "bound on exporting one batch, retries included, a `DURATION`", def: "30s", parse: asPositive},
	{flag: "propagation", group: GroupTuning, envs: envs("PI_OTEL_PROPAGATION"), usage: "what trace context the processes of Pi's bash calls get: call (each call's own execute_tool span) or run (the run's root), a `MODE`", def: "call", parse: asChoice, choices: []string{PropagateCall, PropagateRun}},
	// The wait is only for a call pi-otel has seen asked for but whose
	// span it has not started yet: a bound, not a period.
	{flag: "propagation-wait", group: GroupTuning, envs: envs("PI_OTEL_PROPAGATION_WAIT"), usage: "how long a bash call waits for pi-otel's answer before it runs with the context it inherited, a `DURATION`", def: "500ms", parse: asPositive, floor: time.Millisecond},
	{flag: "propagation-dir", group: GroupTuning, envs: envs("PI_OTEL_PROPAGATION_DIR"), usage: "private `DIR` (0700) where pi-otel hands each bash call its trace context", defText: "$XDG_RUNTIME_DIR/pi-otel, else $TMPDIR/pi-otel-UID", parse: asText},
	{flag: "memory-limit", group: GroupTuning, envs: envs("PI_OTEL_MEMORY_LIMIT"), usage: "soft limit on pi-otel's own heap, a `SIZE` in B, KiB, MiB or GiB (such as 64MiB), or off", defText: "32MiB, or GOMEMLIMIT's when that is set", parse: asSize},
}

// watchSettings are the settings of pi-otel watch alone.
var watchSettings = []setting{
	{flag: "state", envs: envs("PI_OTEL_STATE"), usage: "state `FILE` keeping watch's place in every session file", defText: "$XDG_STATE_HOME/pi-otel/watch.json or ~/.local/state/pi-otel/watch.json", parse: asText},
	{flag: "since", envs: envs("PI_OTEL_SINCE"), usage: "history to trace at the first start: a `DURATION` such as 24h or 7d, or all", defText: "only new activity", parse: asText},
	// While a run is open its file is looked at again every --settle;
	// --close-after is at least --settle (LoadWatch), so the same floor.
	{flag: "settle", envs: envs("PI_OTEL_SETTLE"), usage: "quiet time after a final answer before a run counts as complete, a `DURATION`", def: "30s", parse: asPositive, floor: pollFloor},
	{flag: "close-after", envs: envs("PI_OTEL_CLOSE_AFTER"), usage: "quiet time after which a run with no final answer (Pi killed mid-run) is traced as unfinished, a `DURATION`", def: "30m", parse: asDuration},
	{flag: "wait-lock", envs: envs("PI_OTEL_WAIT_LOCK"), usage: "wait while another watch holds the state file's lock, and take over when it exits, instead of exiting with an error", parse: asBool},
	{flag: "poll", envs: envs("PI_OTEL_POLL"), usage: "scan session directories at this `DURATION` instead of using inotify, e.g. on network file systems", defText: "inotify", parse: asDuration, floor: pollFloor},
}

// replaySettings are the settings of pi-otel replay alone.
var replaySettings = []setting{
	{flag: "follow", envs: envs("PI_OTEL_FOLLOW"), usage: "keep reading FILE as it grows, like tail -F, until interrupted; a FILE not there yet is waited for, and an interrupt before any record exits 1", parse: asBool},
	{flag: "poll", envs: envs("PI_OTEL_FOLLOW_POLL"), usage: "with --follow, how often to look for new data, a `DURATION`", def: "250ms", parse: asPositive, floor: pollFloor},
	// Above the longest lines pi-otel is measured on (200 MB, in
	// docs/watch.md), and a bound on what one line can cost: replay
	// holds a line about three times over while it traces it.
	{flag: "max-line-size", envs: envs("PI_OTEL_MAX_LINE_SIZE"), usage: "skip a line longer than this `SIZE` in B, KiB, MiB or GiB, or off, counting it as damaged, so that input without line ends (/dev/zero) cannot take all memory", def: "256MiB", parse: asSize},
}

// pollFloor is the least interval at which pi-otel looks at files again.
// Pi writes a line per message and a run is traced only once it is
// complete, so looking more often than ten times a second gains nothing
// anyone sees, while a scan of a session tree costs a stat per file; the
// defaults are 2s and 250ms, and inotify reacts at once.
const pollFloor = 100 * time.Millisecond

var protocols = []string{string(telemetry.ProtocolGRPC), string(telemetry.ProtocolHTTPProtobuf)}

func envs(names ...string) []string { return names }

// row returns the setting of a flag. Every caller names a flag of the
// tables, which the tests load; a missing one is a bug.
func row(flag string) *setting {
	if s := findRow(flag); s != nil {
		return s
	}
	panic("config: no setting --" + flag)
}

func findRow(flag string) *setting {
	for _, t := range [][]setting{settings, watchSettings} {
		if i := slices.IndexFunc(t, func(s setting) bool { return s.flag == flag }); i >= 0 {
			return &t[i]
		}
	}
	return nil
}

// tableRow returns the setting of a flag in one table, for the tables
// that row does not search (their flags may share a name with watch's).
func tableRow(table []setting, flag string) *setting {
	if i := slices.IndexFunc(table, func(s setting) bool { return s.flag == flag }); i >= 0 {
		return &table[i]
	}
	panic("config: no setting --" + flag)
}

// flagUsage is the usage package flag holds: what the setting does, then
// its variables, default and notes, the form DescribeFlag reads back.
func (s *setting) flagUsage() string {
	parts := []string{strings.Join(s.envs, ", ")}
	if d := s.defaultText(); d != "" {
		parts = append(parts, "default "+d)
	}
	parts = append(parts, s.notes()...)
	return s.usage + " (" + strings.Join(parts, "; ") + ")"
}

// notes are what help says after the default: the row's note, and the
// floor, which the loader enforces.
func (s *setting) notes() []string {
	var n []string
	if s.note != "" {
		n = append(n, s.note)
	}
	if s.floor > 0 {
		n = append(n, "at least "+s.floor.String())
	}
	return n
}

// defaultText is the default as help and docs state it.
func (s *setting) defaultText() string {
	return cmp.Or(s.defText, s.def)
}

// signalEnv is the signal's own variable for a generic OTLP variable:
// OTEL_EXPORTER_OTLP_TRACES_HEADERS for OTEL_EXPORTER_OTLP_HEADERS.
func signalEnv(generic, signal string) string {
	return otlpPrefix + signal + "_" + strings.TrimPrefix(generic, otlpPrefix)
}

// otlpPrefix starts the variables of the OTLP exporter specification.
const otlpPrefix = "OTEL_EXPORTER_OTLP_"

// orList joins choices as "a, b or c", for messages.
func orList(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}
