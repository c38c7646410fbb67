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
	"time"

	"github.com/pi-otel/pi-otel/internal/telemetry"
)

// GenAILatestOptIn is the OTEL_SEMCONV_STABILITY_OPT_IN entry that selects
// the latest GenAI conventions.
const GenAILatestOptIn = "gen_ai_latest_experimental"

// DefaultMaxContentLength is a default other packages use without
// loading. The settings table is where Load takes every default from; a
// test holds this, and telemetry's defaults, equal to it.
const DefaultMaxContentLength = 4096

// Config is everything pi-otel needs to set up its telemetry: the
// pipeline's own Config, which internal/telemetry owns, and the settings
// of the commands around it.
type Config struct {
	telemetry.Config

	// Warnings name environment values that were ignored (see Load).
	Warnings []string
	// User is enduser.id (--user, else the resource attributes'); empty
	// when none was given.
	User string
	// UserPseudonymKey, when set and User is not, asks for
	// enduser.pseudo.id, a keyed hash of the OS user and host.
	UserPseudonymKey string
	// Team is pi.team (--team, else the resource attributes').
	Team string

	// CaptureContent lets prompts, tool arguments and outputs into
	// telemetry. Off by default.
	CaptureContent bool
	// MaxContentLength bounds each captured content value, in bytes.
	MaxContentLength int

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
