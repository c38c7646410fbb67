package config_test

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
)

// load parses args with pi-otel's flags and env as the environment.
func load(t *testing.T, args []string, env map[string]string) (config.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("pi-otel", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return config.Load(fs, func(k string) string { return env[k] })
}

func mustLoad(t *testing.T, args []string, env map[string]string) config.Config {
	t.Helper()
	cfg, err := load(t, args, env)
	if err != nil {
		t.Fatalf("Load(%q, %v): %v", args, env, err)
	}
	return cfg
}

func TestDefaults(t *testing.T) {
	cfg := mustLoad(t, nil, nil)
	want := config.Config{
		Config: telemetry.Config{
			Traces: telemetry.Signal{
				Exporter: telemetry.ExporterConsole,
				OTLP: telemetry.OTLP{Protocol: telemetry.ProtocolGRPC, Endpoint: "http://localhost:4317",
					Timeout: 10 * time.Second, Compression: "none"},
			},
			Metrics: telemetry.Signal{
				Exporter: telemetry.ExporterNone,
				OTLP: telemetry.OTLP{Protocol: telemetry.ProtocolGRPC, Endpoint: "http://localhost:4317",
					Timeout: 10 * time.Second, Compression: "none"},
			},
			Logs: telemetry.Signal{
				Exporter: telemetry.ExporterNone,
				OTLP: telemetry.OTLP{Protocol: telemetry.ProtocolGRPC, Endpoint: "http://localhost:4317",
					Timeout: 10 * time.Second, Compression: "none"},
			},
			MetricsInterval: 60 * time.Second,
			Temporality:     telemetry.TemporalityCumulative,
			ServiceName:     "pi",
			FlushTimeout:    5 * time.Second,
			Batch: telemetry.Batch{MaxQueueSize: 2048, MaxExportBatchSize: 512,
				ScheduleDelay: 5 * time.Second, ExportTimeout: 30 * time.Second},
			// No HOME, no XDG_STATE_HOME: no place for a spool.
			Spool: telemetry.Spool{MaxBytes: 64 << 20, MaxAge: 7 * 24 * time.Hour},
		},
		MaxContentLength: 4096,
		Propagation:      config.PropagateCall,
		PropagationWait:  500 * time.Millisecond,
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
	if d := configtest.Default(); !reflect.DeepEqual(d, want) {
		t.Errorf("configtest.Default() = %+v", d)
	}
	// A nil flag set and a nil getenv are the same as nothing given.
	bare, err := config.Load(nil, nil)
	if err != nil || !reflect.DeepEqual(bare, want) {
		t.Errorf("Load(nil, nil) = %+v, %v", bare, err)
	}
}

func TestExporterChoice(t *testing.T) {
	tests := []struct {
		name          string
		args          []string
		env           map[string]string
		traces, metrs telemetry.ExporterKind
	}{
		{"nothing set", nil, nil, "console", "none"},
		{"generic endpoint env", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, "otlp", "otlp"},
		{"traces endpoint env only", nil, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4317"}, "otlp", "none"},
		{"metrics endpoint env only", nil, map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4317"}, "console", "otlp"},
		{"endpoint flag", []string{"--endpoint", "c:4317"}, nil, "otlp", "otlp"},
		{"traces file flag", []string{"--traces-file", "t.jsonl"}, nil, "file", "none"},
		{"file beats endpoint", []string{"--traces-file", "t.jsonl"}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, "file", "otlp"},
		{"metrics file env", nil, map[string]string{"PI_OTEL_METRICS_FILE": "m.jsonl"}, "console", "file"},
		{"explicit env wins over endpoint", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_TRACES_EXPORTER": "none"}, "none", "otlp"},
		{"flag wins over env", []string{"--traces-exporter", "console"}, map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, "console", "none"},
		{"case-insensitive", nil, map[string]string{"OTEL_TRACES_EXPORTER": "OTLP", "OTEL_METRICS_EXPORTER": "Console"}, "otlp", "console"},
		{"empty env is unset", nil, map[string]string{"OTEL_TRACES_EXPORTER": "", "OTEL_EXPORTER_OTLP_ENDPOINT": " "}, "console", "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.args, tt.env)
			if cfg.Traces.Exporter != tt.traces || cfg.Metrics.Exporter != tt.metrs {
				t.Errorf("exporters = %s, %s; want %s, %s", cfg.Traces.Exporter, cfg.Metrics.Exporter, tt.traces, tt.metrs)
			}
		})
	}
}

func TestEndpointRules(t *testing.T) {
	tests := []struct {
		name            string
		args            []string
		env             map[string]string
		traces, metrics string
		insecure        bool
		target          string
	}{
		{name: "grpc default", traces: "http://localhost:4317", metrics: "http://localhost:4317", insecure: true, target: "localhost:4317"},
		{name: "http default gets signal paths",
			env:    map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			traces: "http://localhost:4318/v1/traces", metrics: "http://localhost:4318/v1/metrics", insecure: true,
			target: "http://localhost:4318/v1/traces"},
		{name: "http generic endpoint gets signal path",
			env:    map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example:4318"},
			traces: "https://c.example:4318/v1/traces", metrics: "https://c.example:4318/v1/metrics"},
		{name: "http generic endpoint with a base path and trailing slash",
			env:    map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/otlp/"},
			traces: "http://c:4318/otlp/v1/traces", metrics: "http://c:4318/otlp/v1/metrics", insecure: true},
		{name: "http signal endpoint used as is",
			env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
				"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom/spans", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://g:4318"},
			traces: "http://c:4318/custom/spans", metrics: "http://g:4318/v1/metrics", insecure: true},
		{name: "http signal endpoint without a path targets the root",
			env:    map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318"},
			traces: "http://c:4318/", metrics: "http://localhost:4317", insecure: true},
		{name: "grpc drops the path",
			env:    map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c.example:4317/ignored"},
			traces: "https://c.example:4317", metrics: "https://c.example:4317", target: "c.example:4317"},
		{name: "bare remote host is TLS",
			args:   []string{"--endpoint", "collector:4317"},
			traces: "https://collector:4317", metrics: "https://collector:4317"},
		{name: "bare remote host with insecure env is plaintext",
			args:   []string{"--endpoint", "collector:4317"},
			env:    map[string]string{"OTEL_EXPORTER_OTLP_INSECURE": "true"},
			traces: "http://collector:4317", metrics: "http://collector:4317", insecure: true},
		{name: "bare remote host with insecure flag",
			args:   []string{"--endpoint", "collector", "--insecure"},
			traces: "http://collector:4317", metrics: "http://collector:4317", insecure: true},
		{name: "insecure does not override https",
			args:   []string{"--endpoint", "https://c:4317", "--insecure"},
			traces: "https://c:4317", metrics: "https://c:4317"},
		{name: "http:// implies insecure for grpc",
			env:    map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
			traces: "http://c:4317", metrics: "http://c:4317", insecure: true},
		{name: "bare loopback is plaintext, missing port filled in",
			args:   []string{"--endpoint", "127.0.0.1"},
			traces: "http://127.0.0.1:4317", metrics: "http://127.0.0.1:4317", insecure: true},
		{name: "bare IPv6 loopback",
			args:   []string{"--endpoint", "[::1]:9999"},
			traces: "http://[::1]:9999", metrics: "http://[::1]:9999", insecure: true, target: "[::1]:9999"},
		{name: "bare host for http/protobuf",
			args:   []string{"--endpoint", "localhost", "--protocol", "http/protobuf"},
			traces: "http://localhost:4318/v1/traces", metrics: "http://localhost:4318/v1/metrics", insecure: true},
		{name: "flag beats signal env beats generic env",
			args: []string{"--traces-endpoint", "http://flag:1"},
			env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://tenv:2", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://menv:3",
				"OTEL_EXPORTER_OTLP_ENDPOINT": "http://generic:4"},
			traces: "http://flag:1", metrics: "http://menv:3", insecure: true},
		{name: "generic flag beats signal env",
			args:   []string{"--endpoint", "http://flag:1"},
			env:    map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://tenv:2"},
			traces: "http://flag:1", metrics: "http://flag:1", insecure: true},
		{name: "signal flag beats generic flag",
			args:   []string{"--endpoint", "http://flag:1", "--metrics-endpoint", "http://m:5"},
			traces: "http://flag:1", metrics: "http://m:5", insecure: true},
		{name: "protocol per signal",
			args:   []string{"--protocol", "http/protobuf", "--metrics-protocol", "grpc", "--endpoint", "http://c:4318"},
			traces: "http://c:4318/v1/traces", metrics: "http://c:4318", insecure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.args, tt.env)
			if cfg.Traces.OTLP.Endpoint != tt.traces {
				t.Errorf("traces endpoint = %q, want %q", cfg.Traces.OTLP.Endpoint, tt.traces)
			}
			if cfg.Metrics.OTLP.Endpoint != tt.metrics {
				t.Errorf("metrics endpoint = %q, want %q", cfg.Metrics.OTLP.Endpoint, tt.metrics)
			}
			if got := cfg.Traces.OTLP.Insecure(); got != tt.insecure {
				t.Errorf("traces insecure = %v, want %v", got, tt.insecure)
			}
			if tt.target != "" && cfg.Traces.OTLP.Target() != tt.target {
				t.Errorf("target = %q, want %q", cfg.Traces.OTLP.Target(), tt.target)
			}
		})
	}
}

func TestOTLPSettings(t *testing.T) {
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":                        "authorization=Bearer%20tok%2Cen,x-team = core ",
		"OTEL_EXPORTER_OTLP_METRICS_HEADERS":                "only=metrics",
		"OTEL_EXPORTER_OTLP_ENDPOINT":                       "https://c:4317",
		"OTEL_EXPORTER_OTLP_CERTIFICATE":                    "/etc/ca.pem",
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE":      "/etc/client.pem",
		"OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY":              "/etc/client.key",
		"OTEL_EXPORTER_OTLP_TIMEOUT":                        "2500",
		"OTEL_EXPORTER_OTLP_METRICS_TIMEOUT":                "1s",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION":             "GZIP",
		"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "cumulative",
	}
	cfg := mustLoad(t, nil, env)
	tr, m := cfg.Traces.OTLP, cfg.Metrics.OTLP
	wantHeaders := map[string]string{"authorization": "Bearer tok,en", "x-team": "core"}
	if !reflect.DeepEqual(tr.Headers, wantHeaders) {
		t.Errorf("traces headers = %v, want %v", tr.Headers, wantHeaders)
	}
	// A signal's own headers replace the generic ones rather than merge.
	if !reflect.DeepEqual(m.Headers, map[string]string{"only": "metrics"}) {
		t.Errorf("metrics headers = %v", m.Headers)
	}
	if tr.Certificate != "/etc/ca.pem" || m.Certificate != "/etc/ca.pem" {
		t.Errorf("certificates = %q, %q", tr.Certificate, m.Certificate)
	}
	if tr.ClientCertificate != "/etc/client.pem" || tr.ClientKey != "/etc/client.key" || m.ClientCertificate != "" {
		t.Errorf("client certs = %+v / %+v", tr, m)
	}
	if tr.Timeout != 2500*time.Millisecond || m.Timeout != time.Second {
		t.Errorf("timeouts = %v, %v", tr.Timeout, m.Timeout)
	}
	if tr.Compression != "gzip" || m.Compression != "none" {
		t.Errorf("compression = %q, %q", tr.Compression, m.Compression)
	}
	if cfg.Temporality != telemetry.TemporalityCumulative {
		t.Errorf("temporality = %q", cfg.Temporality)
	}

	// Flags beat every variable.
	cfg = mustLoad(t, []string{"--headers", "a=1", "--timeout", "3s", "--compression", "none"}, env)
	if !reflect.DeepEqual(cfg.Traces.OTLP.Headers, map[string]string{"a": "1"}) ||
		!reflect.DeepEqual(cfg.Metrics.OTLP.Headers, map[string]string{"a": "1"}) {
		t.Errorf("flag headers = %v / %v", cfg.Traces.OTLP.Headers, cfg.Metrics.OTLP.Headers)
	}
	if cfg.Traces.OTLP.Timeout != 3*time.Second || cfg.Traces.OTLP.Compression != "none" {
		t.Errorf("flag timeout/compression = %v %q", cfg.Traces.OTLP.Timeout, cfg.Traces.OTLP.Compression)
	}
}

func TestGeneralSettings(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(config.Config) bool
	}{
		{"service name from env", nil, map[string]string{"OTEL_SERVICE_NAME": "agent"},
			func(c config.Config) bool { return c.ServiceName == "agent" }},
		{"service name from resource attributes", nil, map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=fromattrs"},
			func(c config.Config) bool { return c.ServiceName == "fromattrs" && len(c.ResourceAttributes) == 0 }},
		{"OTEL_SERVICE_NAME beats resource attributes", nil, map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=a", "OTEL_SERVICE_NAME": "b"},
			func(c config.Config) bool { return c.ServiceName == "b" }},
		{"flag beats OTEL_SERVICE_NAME", []string{"--service-name", "c"}, map[string]string{"OTEL_SERVICE_NAME": "b"},
			func(c config.Config) bool { return c.ServiceName == "c" }},
		{"resource attributes sorted and decoded", nil, map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "z=1,deployment.environment=dev%20box,a=x%3Dy"},
			func(c config.Config) bool {
				return reflect.DeepEqual(c.ResourceAttributes, []attribute.KeyValue{
					attribute.String("a", "x=y"), attribute.String("deployment.environment", "dev box"), attribute.String("z", "1")})
			}},
		{"quiet flag", []string{"--quiet"}, nil, func(c config.Config) bool { return c.Quiet }},
		{"quiet env", nil, map[string]string{"PI_OTEL_QUIET": "TRUE"}, func(c config.Config) bool { return c.Quiet }},
		{"quiet=false flag beats env", []string{"--quiet=false"}, map[string]string{"PI_OTEL_QUIET": "true"}, func(c config.Config) bool { return !c.Quiet }},
		{"NO_COLOR", nil, map[string]string{"NO_COLOR": "1"}, func(c config.Config) bool { return c.NoColor }},
		{"flush timeout ms", nil, map[string]string{"PI_OTEL_FLUSH_TIMEOUT": "1500"}, func(c config.Config) bool { return c.FlushTimeout == 1500*time.Millisecond }},
		{"flush timeout duration", []string{"--flush-timeout", "2s"}, map[string]string{"PI_OTEL_FLUSH_TIMEOUT": "1500"}, func(c config.Config) bool { return c.FlushTimeout == 2*time.Second }},
		{"flush timeout zero allowed", []string{"--flush-timeout", "0"}, nil, func(c config.Config) bool { return c.FlushTimeout == 0 }},
		{"capture content env", nil, map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}, func(c config.Config) bool { return c.CaptureContent }},
		{"capture content flag", []string{"--capture-content"}, nil, func(c config.Config) bool { return c.CaptureContent }},
		{"max content length env", nil, map[string]string{"PI_OTEL_MAX_CONTENT_LENGTH": "100"}, func(c config.Config) bool { return c.MaxContentLength == 100 }},
		// OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT has its specification's meaning: every attribute, not content.
		{"attribute limit env", nil, map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "100"}, func(c config.Config) bool {
			return c.AttributeValueLengthLimit == 100 && c.MaxContentLength == config.DefaultMaxContentLength
		}},
		{"span attribute limit env wins", nil, map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "100", "OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "50"},
			func(c config.Config) bool { return c.AttributeValueLengthLimit == 50 }},
		{"attribute limit flag", []string{"--attribute-value-length-limit", "7"}, map[string]string{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "100"},
			func(c config.Config) bool { return c.AttributeValueLengthLimit == 7 }},
		{"no attribute limit by default", nil, nil, func(c config.Config) bool { return c.AttributeValueLengthLimit == 0 }},
		{"max content length 0 means unlimited", []string{"--max-content-length", "0"}, nil, func(c config.Config) bool { return c.MaxContentLength == 0 }},
		{"redact env, one per line", nil, map[string]string{"PI_OTEL_REDACT": "sk-[a-z]{3,}\n\n  \nghp_\\w+|xox[bp]-\\S+\r\n"},
			func(c config.Config) bool {
				return reflect.DeepEqual(c.Redact, []string{"sk-[a-z]{3,}", "ghp_\\w+|xox[bp]-\\S+"})
			}},
		{"redact flags repeat and replace env", []string{"--redact", "a,b{1,2}", "--redact", "c"}, map[string]string{"PI_OTEL_REDACT": "zzz"},
			func(c config.Config) bool { return reflect.DeepEqual(c.Redact, []string{"a,b{1,2}", "c"}) }},
		{"batch env", nil, map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "10", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "4",
			"OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BSP_EXPORT_TIMEOUT": "2000"},
			func(c config.Config) bool {
				return c.Batch == telemetry.Batch{MaxQueueSize: 10, MaxExportBatchSize: 4, ScheduleDelay: 100 * time.Millisecond, ExportTimeout: 2 * time.Second}
			}},
		{"batch clamped to queue", []string{"--queue-size", "8"}, nil, func(c config.Config) bool {
			return c.Batch.MaxQueueSize == 8 && c.Batch.MaxExportBatchSize == 8
		}},
		{"metrics interval", nil, map[string]string{"OTEL_METRIC_EXPORT_INTERVAL": "1000"}, func(c config.Config) bool { return c.MetricsInterval == time.Second }},
		{"stderr file", []string{"--traces-file", "-"}, nil, func(c config.Config) bool {
			return c.Traces.Exporter == telemetry.ExporterFile && c.Traces.File == "-"
		}},
		{"bad OTLP settings ignored when OTLP is unused", []string{"--traces-exporter", "console"},
			map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon", "OTEL_EXPORTER_OTLP_CERTIFICATE": "/ca.pem"},
			func(c config.Config) bool { return c.Traces.Exporter == telemetry.ExporterConsole }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.args, tt.env)
			if !tt.check(cfg) {
				t.Errorf("unexpected config: %+v", cfg)
			}
		})
	}
}

// textCase is a configuration whose error (TestErrors) or warnings
// (TestEnvWarnings) must say want and must not leak hide.
type textCase struct {
	name  string
	args  []string
	env   map[string]string
	want  []string                 // substrings of the text
	hide  []string                 // must not appear in it
	check func(config.Config) bool // TestEnvWarnings: the config kept
}

// checkText reports, as what, a text that misses a want or shows a hide.
func checkText(t *testing.T, what, text string, want, hide []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s %q does not contain %q", what, text, w)
		}
	}
	for _, h := range hide {
		if strings.Contains(text, h) {
			t.Errorf("%s %q leaks %q", what, text, h)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []textCase{
		{name: "unknown traces exporter flag", args: []string{"--traces-exporter", "x"},
			want: []string{`unknown --traces-exporter "x": want otlp, console, file or none`}},
		{name: "unknown protocol", args: []string{"--traces-exporter", "otlp", "--protocol", "http/json"},
			want: []string{`unknown --protocol "http/json": want grpc or http/protobuf`}},
		{name: "file without a path", args: []string{"--traces-exporter", "file"},
			want: []string{"--traces-exporter file needs --traces-file PATH"}},
		{name: "stdout is pi's", args: []string{"--traces-file", "/dev/stdout"},
			want: []string{"stdout belongs to pi"}},
		{name: "bad header encoding hides its text", args: []string{"--traces-exporter", "otlp", "--headers", "k=s3cr3t%zz"},
			want: []string{"--headers: entry 1 has a bad percent-encoding"}, hide: []string{"s3cr3t"}},
		{name: "bad endpoint scheme", args: []string{"--traces-exporter", "otlp", "--endpoint", "ftp://user:s3cr3t@c"},
			want: []string{"scheme must be http or https"}, hide: []string{"s3cr3t"}},
		{name: "half a client pair", args: []string{"--traces-exporter", "otlp", "--endpoint", "https://c", "--client-key", "k.pem"},
			want: []string{"needs both a client certificate and a client key"}},
		{name: "certificate with plaintext", args: []string{"--traces-exporter", "otlp", "--certificate", "ca.pem"},
			want: []string{"endpoint http://localhost:4317 is plaintext"}},
		{name: "bad regex hides the pattern", args: []string{"--redact", "ok", "--redact", "(s3cr3t"},
			want: []string{"--redact pattern 2 is not a valid regular expression (missing closing )"}, hide: []string{"s3cr3t"}},
		{name: "bad duration", args: []string{"--flush-timeout", "soon"},
			want: []string{`--flush-timeout "soon": want a duration`}},
		{name: "negative duration", args: []string{"--flush-timeout", "-1s"},
			want: []string{`--flush-timeout "-1s"`}},
		{name: "bad temporality", args: []string{"--metrics-temporality", "sometimes"},
			want: []string{`unknown --metrics-temporality "sometimes"`}},
		{name: "all errors at once", args: []string{"--traces-exporter", "x", "--metrics-exporter", "y"},
			want: []string{`--traces-exporter "x"`, `--metrics-exporter "y"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, tt.args, tt.env)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			checkText(t, "error", err.Error(), tt.want, tt.hide)
		})
	}
}

// TestEnvWarnings: the OTEL_* variables are often set machine-wide for
// other tools, so a value pi-otel cannot use is ignored with a warning and
// the default kept, as the specification asks; Pi still starts. Only
// pi-otel's own flags refuse to start (TestErrors).
func TestEnvWarnings(t *testing.T) {
	tests := []textCase{
		{name: "unknown traces exporter env", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"},
			want: []string{`unknown OTEL_TRACES_EXPORTER "zipkin": want otlp, console, file or none`}},
		{name: "bad header entry hides its text", args: []string{"--traces-exporter", "otlp"},
			env:  map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1,Bearer s3cr3t"},
			want: []string{"OTEL_EXPORTER_OTLP_HEADERS: entry 2 is not key=value"}, hide: []string{"s3cr3t"}},
		{name: "bad regex env", env: map[string]string{"PI_OTEL_REDACT": "[s3cr3t"},
			want: []string{"PI_OTEL_REDACT pattern 1 is not a valid regular expression"}, hide: []string{"s3cr3t"}},
		{name: "bad bool", env: map[string]string{"PI_OTEL_QUIET": "yes please"},
			want: []string{`PI_OTEL_QUIET "yes please": want true or false`}},
		{name: "bad number", env: map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "0"},
			want: []string{`OTEL_BSP_MAX_QUEUE_SIZE "0": want a whole number of at least 1`}},
		{name: "zero schedule delay", env: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "0"},
			want: []string{`ignoring OTEL_BSP_SCHEDULE_DELAY "0": want a duration above 0`}},
		{name: "zero propagation wait", env: map[string]string{"PI_OTEL_PROPAGATION_WAIT": "0"},
			want: []string{`ignoring PI_OTEL_PROPAGATION_WAIT "0": want a duration of at least 1ms`}},
		{name: "foreign traces exporter list", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin,jaeger"},
			want: []string{`ignoring unknown OTEL_TRACES_EXPORTER "zipkin,jaeger"`}},
		{name: "a list with one we know", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp,console"},
			check: func(c config.Config) bool { return c.Traces.Exporter == telemetry.ExporterOTLP && len(c.Warnings) == 0 }},
		{name: "foreign metrics exporter", env: map[string]string{"OTEL_METRICS_EXPORTER": "prometheus"},
			want:  []string{`ignoring unknown OTEL_METRICS_EXPORTER "prometheus"`},
			check: func(c config.Config) bool { return c.Metrics.Exporter == telemetry.ExporterNone }},
		{name: "one bad resource pair discards the value", env: map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "team=a,oops"},
			want:  []string{`ignoring OTEL_RESOURCE_ATTRIBUTES: entry "oops" is not key=value`},
			check: func(c config.Config) bool { return len(c.ResourceAttributes) == 0 }},
		{name: "bad endpoint env falls back", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://u:s3cr3t@c"},
			want: []string{"scheme must be http or https"}, hide: []string{"s3cr3t"},
			check: func(c config.Config) bool { return c.Traces.OTLP.Endpoint == "http://localhost:4317" }},
		{name: "exporter file without a file", env: map[string]string{"OTEL_TRACES_EXPORTER": "file"},
			want:  []string{"needs --traces-file PATH"},
			check: func(c config.Config) bool { return c.Traces.Exporter == telemetry.ExporterConsole }},
		{name: "bad redaction pattern turns content capture off", args: []string{"--capture-content"},
			env: map[string]string{"PI_OTEL_REDACT": "[s3cr3t"}, want: []string{"content capture is off"}, hide: []string{"s3cr3t"},
			check: func(c config.Config) bool { return !c.CaptureContent }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := load(t, tt.args, tt.env)
			if err != nil {
				t.Fatalf("Load failed: %v", err)
			}
			checkText(t, "warnings", strings.Join(cfg.Warnings, "\n"), tt.want, tt.hide)
			if tt.check != nil && !tt.check(cfg) {
				t.Errorf("unexpected config: %+v", cfg)
			}
		})
	}
}

func TestRegisterFlagsUsage(t *testing.T) {
	fs := flag.NewFlagSet("pi-otel", flag.ContinueOnError)
	config.RegisterFlags(fs)
	for _, name := range []string{"traces-exporter", "traces-file", "endpoint", "protocol", "headers", "insecure",
		"certificate", "client-certificate", "client-key", "timeout", "service-name", "resource-attributes",
		"metrics-exporter", "metrics-file", "quiet", "flush-timeout", "capture-content", "max-content-length",
		"redact", "queue-size"} {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag --%s is not registered", name)
			continue
		}
		if f.Usage == "" {
			t.Errorf("flag --%s has no usage", name)
		}
	}
	// Flags not given stay out of Load's way: an unparsed set is the defaults.
	cfg, err := config.Load(fs, func(string) string { return "" })
	if err != nil || cfg.Traces.Exporter != telemetry.ExporterConsole {
		t.Errorf("unparsed flags: %+v, %v", cfg.Traces, err)
	}
}

func TestSpoolDir(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"XDG state home", nil, map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, "/s/pi-otel/spool"},
		{"relative XDG ignored, as XDG says", nil, map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.local/state/pi-otel/spool"},
		{"env", nil, map[string]string{"PI_OTEL_SPOOL_DIR": "/d", "HOME": "/h"}, "/d"},
		{"flag none turns it off", []string{"--spool-dir", "none"}, map[string]string{"HOME": "/h"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustLoad(t, c.args, c.env)
			if cfg.Spool.Dir != c.want {
				t.Errorf("spool dir %q, want %q", cfg.Spool.Dir, c.want)
			}
		})
	}
}

// TestLogsSignal: log records are off unless asked for; a generic endpoint
// (set for traces) does not turn them on, their own settings do, and they
// get the _LOGS_ variables and the /v1/logs path like the other signals.
func TestLogsSignal(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		exporter telemetry.ExporterKind
		file     string
		endpoint string
	}{
		{name: "off by default", exporter: "none", endpoint: "http://localhost:4317"},
		{name: "generic endpoint leaves it off", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
			exporter: "none", endpoint: "http://c:4317"},
		{name: "own endpoint env", env: map[string]string{"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://l:4317"},
			exporter: "otlp", endpoint: "http://l:4317"},
		{name: "own endpoint flag", args: []string{"--logs-endpoint", "http://l:4318/x", "--logs-protocol", "http/protobuf"},
			exporter: "otlp", endpoint: "http://l:4318/x"},
		{name: "file implies file", env: map[string]string{"PI_OTEL_LOGS_FILE": "l.jsonl"},
			exporter: "file", file: "l.jsonl", endpoint: "http://localhost:4317"},
		{name: "file flag", args: []string{"--logs-file", "-"}, exporter: "file", file: "-", endpoint: "http://localhost:4317"},
		{name: "exporter env", env: map[string]string{"OTEL_LOGS_EXPORTER": "console"}, exporter: "console", endpoint: "http://localhost:4317"},
		{name: "http generic gets /v1/logs", args: []string{"--logs-exporter", "otlp"},
			env:      map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf"},
			exporter: "otlp", endpoint: "http://c:4318/v1/logs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustLoad(t, tt.args, tt.env)
			l := cfg.Logs
			if l.Exporter != tt.exporter || l.File != tt.file || l.OTLP.Endpoint != tt.endpoint {
				t.Errorf("logs = %s %q %q; want %s %q %q", l.Exporter, l.File, l.OTLP.Endpoint, tt.exporter, tt.file, tt.endpoint)
			}
		})
	}
	cfg := mustLoad(t, []string{"--logs-exporter", "otlp"}, map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_LOGS_HEADERS": "b=2", "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT": "250",
	})
	if h := cfg.Logs.OTLP.Headers; h["b"] != "2" || len(h) != 1 || cfg.Logs.OTLP.Timeout != 250*time.Millisecond {
		t.Errorf("logs OTLP = %+v", cfg.Logs.OTLP)
	}
	if _, err := load(t, []string{"--logs-exporter", "file"}, nil); err == nil {
		t.Error("--logs-exporter file without a file: no error")
	}
}

// TestSemconvOptIn: the conventions' own switch, a list whose other
// entries belong to other instrumentations.
func TestSemconvOptIn(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  string
		want bool
	}{
		{nil, "", false},
		{nil, "gen_ai_latest_experimental", true},
		{nil, "http/dup, gen_ai_latest_experimental", true},
		{nil, "http/dup", false},
		{[]string{"--semconv-stability-opt-in", "gen_ai_latest_experimental"}, "", true},
		{[]string{"--semconv-stability-opt-in", "http"}, "gen_ai_latest_experimental", false}, // the flag wins
	} {
		cfg := mustLoad(t, tt.args, map[string]string{"OTEL_SEMCONV_STABILITY_OPT_IN": tt.env})
		if cfg.GenAILatest != tt.want {
			t.Errorf("%q %q: GenAILatest = %v", tt.args, tt.env, cfg.GenAILatest)
		}
	}
}

// TestGarbledEndpoints: an endpoint no connection could ever use is named,
// with the form expected, at start-up: a flag refuses, a variable is
// ignored with one warning (not one per signal).
func TestGarbledEndpoints(t *testing.T) {
	for _, raw := range []string{"not a url", "::::", "http://", "http://:4317", "host:99999", "https://a b:4317", "localhost:port"} {
		t.Run(raw, func(t *testing.T) {
			_, err := load(t, []string{"--endpoint", raw}, nil)
			if err == nil {
				t.Fatal("Load accepted the endpoint")
			}
			msg := err.Error()
			if strings.Count(msg, "\n") != 0 {
				t.Errorf("error is more than one line:\n%s", msg)
			}
			for _, w := range []string{"--endpoint", fmt.Sprintf("%q", raw), "want http://HOST:PORT"} {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			cfg, err := load(t, nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": raw})
			if err != nil {
				t.Fatalf("a bad variable refused to start: %v", err)
			}
			if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "want http://HOST:PORT") {
				t.Errorf("warnings = %q, want one naming the expected form", cfg.Warnings)
			}
			// Ignored is as good as unset: no signal turns to OTLP for it.
			unset := mustLoad(t, nil, nil)
			for _, sig := range []struct {
				name      string
				got, want telemetry.ExporterKind
			}{
				{"traces", cfg.Traces.Exporter, unset.Traces.Exporter},
				{"metrics", cfg.Metrics.Exporter, unset.Metrics.Exporter},
				{"logs", cfg.Logs.Exporter, unset.Logs.Exporter},
			} {
				if sig.got != sig.want {
					t.Errorf("%s exporter = %v with the ignored variable, %v with it unset", sig.name, sig.got, sig.want)
				}
			}
			cfg = mustLoad(t, nil, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": raw})
			if cfg.Traces.Exporter != unset.Traces.Exporter || len(cfg.Warnings) != 1 {
				t.Errorf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT %q: exporter %v, warnings %q; want %v and one warning",
					raw, cfg.Traces.Exporter, cfg.Warnings, unset.Traces.Exporter)
			}
		})
	}
	for _, good := range []string{"collector:4317", "http://[::1]:4317", "https://otel.example.com", "10.0.0.1", "my_host:4318"} {
		if _, err := load(t, []string{"--endpoint", good}, nil); err != nil {
			t.Errorf("--endpoint %q refused: %v", good, err)
		}
	}
}

// TestFlagRefusedWithoutOTLP: a flag's bad value is an error even when the
// OTLP exporter it configures is not in use, and it is said once.
func TestFlagRefusedWithoutOTLP(t *testing.T) {
	for _, args := range [][]string{
		{"--protocol", "bogus"},
		{"--compression", "zip"},
		{"--timeout", "soon"},
		{"--insecure=maybe"},
	} {
		_, err := load(t, args, nil)
		if err == nil {
			t.Errorf("%q accepted without an endpoint", args)
			continue
		}
		if n := strings.Count(err.Error(), args[0][:strings.IndexAny(args[0]+"=", "=")]); n != 1 {
			t.Errorf("%q: error names the flag %d times, want once:\n%s", args, n, err)
		}
	}
	// A stray variable of an exporter not in use still changes nothing.
	cfg, err := load(t, nil, map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "bogus"})
	if err != nil || len(cfg.Warnings) != 0 {
		t.Errorf("stray OTEL_EXPORTER_OTLP_PROTOCOL: err %v, warnings %q", err, cfg.Warnings)
	}
}

// TestFlagTable: every flag has its variable and, unless boolean, an
// upper-case placeholder; and a default the table states is the default
// the loader uses: setting the variable to it changes nothing.
func TestFlagTable(t *testing.T) {
	base := configtest.Default()
	for _, d := range config.Flags() {
		if len(d.Envs) == 0 {
			t.Errorf("--%s names no environment variable", d.Name)
		}
		if !d.Boolean && (d.Placeholder == "" || d.Placeholder != strings.ToUpper(d.Placeholder)) {
			t.Errorf("--%s has placeholder %q; want an upper-case one", d.Name, d.Placeholder)
		}
		if d.Group == "" || !slices.Contains(config.Groups, d.Group) {
			t.Errorf("--%s is in no known group (%q)", d.Name, d.Group)
		}
		if d.Default == "" || strings.Contains(d.Default, " ") {
			continue // stated in words: "file if --traces-file is set, ..."
		}
		v := d.Default
		if v == "off" {
			v = "false"
		}
		cfg, err := load(t, nil, map[string]string{d.Envs[0]: v})
		if err != nil || len(cfg.Warnings) > 0 {
			t.Errorf("%s=%s (the stated default): %v %q", d.Envs[0], v, err, cfg.Warnings)
			continue
		}
		cfg.Warnings = nil
		if !reflect.DeepEqual(cfg, base) {
			t.Errorf("%s=%s, the stated default of --%s, is not the default:\n got %+v\nwant %+v", d.Envs[0], v, d.Name, cfg, base)
		}
	}
}

// --memory-limit is pi-otel's own, checked, alternative to GOMEMLIMIT,
// which the Go runtime aborts on before pi-otel can say anything.
func TestMemoryLimit(t *testing.T) {
	for v, want := range map[string]int64{"64MiB": 64 << 20, "1GiB": 1 << 30, "1048576": 1 << 20, "512KiB": 512 << 10, "off": -1} {
		cfg, err := load(t, []string{"--memory-limit", v}, nil)
		if err != nil || cfg.MemoryLimit != want {
			t.Errorf("--memory-limit %s: %d, %v; want %d", v, cfg.MemoryLimit, err, want)
		}
	}
	if cfg := configtest.Default(); cfg.MemoryLimit != 0 {
		t.Errorf("unset memory limit = %d, want 0 (the default applies)", cfg.MemoryLimit)
	}
	for _, bad := range []string{"abc", "64MB", "-1", "0", "1.5GiB"} {
		_, err := load(t, []string{"--memory-limit", bad}, nil)
		if err == nil || !strings.Contains(err.Error(), "want a size such as 64MiB") {
			t.Errorf("--memory-limit %s: %v", bad, err)
		}
		cfg, err := load(t, nil, map[string]string{"PI_OTEL_MEMORY_LIMIT": bad})
		if err != nil || len(cfg.Warnings) != 1 || cfg.MemoryLimit != 0 {
			t.Errorf("PI_OTEL_MEMORY_LIMIT=%s: %v %q", bad, err, cfg.Warnings)
		}
	}
}
