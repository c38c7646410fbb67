package config

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// Load resolves the configuration from the flags given on fs (registered with
// RegisterFlags; fs may be nil) and from the environment as seen through
// getenv (os.Getenv in production). A flag given on the command line wins
// over the environment, which wins over the default. Error messages never
// contain header values.
func Load(fs *flag.FlagSet, getenv func(string) string) (Config, error) {
	l := loader{s: newSources(fs, getenv)}
	cfg := l.load()
	// Traces and metrics read the same generic settings: say each once.
	if err := errors.Join(uniqueErrs(l.errs)...); err != nil {
		return Config{}, err
	}
	cfg.Warnings = unique(l.warnings)
	return cfg, nil
}

func uniqueErrs(errs []error) []error {
	var out []error
	seen := map[string]bool{}
	for _, e := range errs {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			out = append(out, e)
		}
	}
	return out
}

func unique(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// Default is the configuration when nothing is set.
func Default() Config {
	cfg, _ := Load(nil, nil)
	return cfg
}

// sources answers "what was this setting given as, and where".
type sources struct {
	getenv func(string) string
	flags  map[string]string
	lists  map[string][]string
}

// lookup returns the first of the flags, then the first of the environment
// variables, that is set to something non-empty, and the name it came from
// ("--flag" or "ENV"). An empty environment variable counts as unset, as the
// OpenTelemetry specification asks.
func (s *sources) lookup(flags []string, envs ...string) (val, from string, ok bool) {
	for _, f := range flags {
		if v, set := s.flags[f]; set {
			return strings.TrimSpace(v), "--" + f, true
		}
	}
	for _, e := range envs {
		if v := strings.TrimSpace(s.getenv(e)); v != "" {
			return v, e, true
		}
	}
	return "", "", false
}

func flags(names ...string) []string { return names }

// newSources reads back the flags given on fs (registered with register;
// fs may be nil) and looks the environment up through getenv (nil: an empty
// environment).
func newSources(fs *flag.FlagSet, getenv func(string) string) *sources {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	s := &sources{getenv: getenv, flags: map[string]string{}, lists: map[string][]string{}}
	if fs != nil {
		fs.Visit(func(f *flag.Flag) {
			switch v := f.Value.(type) {
			case *textValue:
				s.flags[f.Name] = v.text
			case *listValue:
				s.lists[f.Name] = *v
			}
		})
	}
	return s
}

// loader collects every error rather than stopping at the first, so a user
// fixes a bad setup in one go.
type loader struct {
	s        *sources
	errs     []error
	warnings []string
	// noContent: a redaction pattern from the environment was unusable.
	noContent bool
	// unusedErrs are flag settings that only conflict when OTLP is used.
	unusedErrs []error
	// endpointWarnings says why an endpoint from the environment was ignored.
	endpointWarnings []string
}

func (l *loader) fail(format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf(format, args...))
}

// bad reports a value from source from that cannot be used. pi-otel's own
// flags refuse to start; an environment variable, often set machine-wide
// for other tools, is ignored with a warning, as the OpenTelemetry
// specification asks, so the caller keeps the default. It reports whether
// the value came from the environment.
func (l *loader) bad(from, format string, args ...any) (ignored bool) {
	if strings.HasPrefix(from, "--") {
		l.fail(format, args...)
		return false
	}
	l.warnings = append(l.warnings, "ignoring "+fmt.Sprintf(format, args...))
	return true
}

func (l *loader) load() Config {
	cfg := Config{
		ServiceName:      DefaultServiceName,
		FlushTimeout:     DefaultFlushTimeout,
		MaxContentLength: DefaultMaxContentLength,
		MetricsInterval:  DefaultMetricsInterval,
		Temporality:      TemporalityCumulative,
		Batch: Batch{
			MaxQueueSize:       DefaultMaxQueueSize,
			MaxExportBatchSize: DefaultMaxExportBatch,
			ScheduleDelay:      DefaultScheduleDelay,
			ExportTimeout:      DefaultExportTimeout,
		},
	}

	cfg.Traces = l.signal("traces", "TRACES", ExporterConsole, true)
	cfg.Metrics = l.signal("metrics", "METRICS", ExporterNone, true)
	cfg.Logs = l.signal("logs", "LOGS", ExporterNone, false)

	l.duration(&cfg.MetricsInterval, true, flags("metrics-interval"), "OTEL_METRIC_EXPORT_INTERVAL")
	if v, from, ok := l.s.lookup(flags("metrics-temporality"), "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"); ok {
		switch t := Temporality(strings.ToLower(v)); t {
		case TemporalityDelta, TemporalityCumulative, TemporalityLowMemory:
			cfg.Temporality = t
		default:
			l.bad(from, "unknown %s %q: want delta, cumulative or lowmemory", from, v)
		}
	}

	l.resource(&cfg)

	l.boolean(&cfg.Quiet, flags("quiet"), "PI_OTEL_QUIET")
	cfg.NoColor = l.s.getenv("NO_COLOR") != ""
	l.duration(&cfg.FlushTimeout, false, flags("flush-timeout"), "PI_OTEL_FLUSH_TIMEOUT")

	l.boolean(&cfg.CaptureContent, flags("capture-content"), "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
	l.integer(&cfg.MaxContentLength, 0, flags("max-content-length"), "PI_OTEL_MAX_CONTENT_LENGTH")
	l.integer(&cfg.AttributeValueLengthLimit, 0, flags("attribute-value-length-limit"),
		"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
	cfg.Redact = l.redact()
	if l.noContent {
		cfg.CaptureContent, cfg.Redact = false, nil
	}

	l.spool(&cfg)

	if v, _, ok := l.s.lookup(flags("semconv-stability-opt-in"), "OTEL_SEMCONV_STABILITY_OPT_IN"); ok {
		for entry := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(entry), GenAILatestOptIn) {
				cfg.GenAILatest = true
			}
		}
	}

	l.integer(&cfg.Batch.MaxQueueSize, 1, flags("queue-size"), "OTEL_BSP_MAX_QUEUE_SIZE")
	l.integer(&cfg.Batch.MaxExportBatchSize, 1, flags("max-export-batch-size"), "OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
	l.duration(&cfg.Batch.ScheduleDelay, true, flags("schedule-delay"), "OTEL_BSP_SCHEDULE_DELAY")
	l.duration(&cfg.Batch.ExportTimeout, true, flags("export-timeout"), "OTEL_BSP_EXPORT_TIMEOUT")
	if v, from, ok := l.s.lookup(flags("memory-limit"), "PI_OTEL_MEMORY_LIMIT"); ok {
		if n, err := parseSize(v); err != nil {
			l.bad(from, "%s %q: want a size such as 64MiB (B, KiB, MiB, GiB) or off", from, v)
		} else {
			cfg.MemoryLimit = n
		}
	}
	// The SDK clamps the batch to the queue the same way.
	cfg.Batch.MaxExportBatchSize = min(cfg.Batch.MaxExportBatchSize, cfg.Batch.MaxQueueSize)
	return cfg
}

// signal resolves the exporter, file and OTLP settings of one signal.
// name is the flag prefix ("traces"), env the variable infix ("TRACES").
// anyEndpoint says whether the generic endpoint, not only the signal's
// own, turns an unnamed exporter to otlp.
func (l *loader) signal(name, env string, fallback ExporterKind, anyEndpoint bool) Signal {
	var sig Signal
	file, fileFrom, hasFile := l.s.lookup(flags(name+"-file"), "PI_OTEL_"+env+"_FILE")
	if hasFile && isStdout(file) {
		hasFile = !l.bad(fileFrom, "%s %q: stdout belongs to pi; use - for stderr", fileFrom, file)
	}
	if hasFile {
		sig.File = file
	}
	endpointFlags, endpointEnvs := flags(name+"-endpoint"), []string{"OTEL_EXPORTER_OTLP_" + env + "_ENDPOINT"}
	if anyEndpoint {
		endpointFlags, endpointEnvs = append(endpointFlags, "endpoint"), append(endpointEnvs, "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	_, _, hasEndpoint := l.s.lookup(endpointFlags, endpointEnvs...)

	// OTLP settings only matter, and only fail the load, when OTLP is used:
	// a stray OTEL_EXPORTER_OTLP_CERTIFICATE must not break --traces-exporter console.
	// A flag's unusable value is refused all the same: the user typed it,
	// and "--protocol bogus" must not pass because no endpoint is set.
	sub := &loader{s: l.s}
	sig.OTLP = sub.otlp(name, env)
	l.errs = append(l.errs, sub.errs...)
	// An ignored endpoint is as good as unset: it must not turn OTLP on
	// and leave pi-otel waiting on the default one at exit. Its warning
	// is shown either way.
	if hasEndpoint && sig.OTLP.EndpointFrom == "" {
		hasEndpoint = false
		l.warnings = append(l.warnings, sub.endpointWarnings...)
	}

	exporterEnv := "OTEL_" + env + "_EXPORTER"
	v, expFrom, ok := l.s.lookup(flags(name+"-exporter"), exporterEnv)
	if ok {
		k, err := exporterKind(v)
		switch {
		case err == nil:
			sig.Exporter = k
		case l.bad(expFrom, "unknown %s %q: %v", expFrom, v, err):
			ok = false // fall back as if unset
		}
	}
	if !ok {
		switch {
		case hasFile:
			sig.Exporter = ExporterFile
		case hasEndpoint:
			sig.Exporter = ExporterOTLP
		default:
			sig.Exporter = fallback
		}
	}
	if sig.Exporter == ExporterFile && sig.File == "" {
		if l.bad(expFrom, "--%s-exporter file needs --%s-file PATH (or PI_OTEL_%s_FILE); use - for stderr", name, name, env) {
			sig.Exporter = fallback
		}
	}

	if sig.Exporter == ExporterOTLP {
		l.errs = append(l.errs, sub.unusedErrs...)
		l.warnings = append(l.warnings, sub.warnings...)
	}
	return sig
}

// otlp resolves one signal's OTLP settings: for each, the signal's own flag,
// then the generic flag, then OTEL_EXPORTER_OTLP_<SIGNAL>_X, then
// OTEL_EXPORTER_OTLP_X.
func (l *loader) otlp(name, env string) OTLP {
	o := OTLP{
		Protocol:    ProtocolGRPC,
		Timeout:     DefaultOTLPTimeout,
		Compression: "none",
	}
	pick := func(setting, flag string) (string, string, bool) {
		fl := []string{flag}
		if setting == "ENDPOINT" || setting == "PROTOCOL" {
			fl = []string{name + "-" + flag, flag}
		}
		return l.s.lookup(fl, "OTEL_EXPORTER_OTLP_"+env+"_"+setting, "OTEL_EXPORTER_OTLP_"+setting)
	}

	if v, from, ok := pick("PROTOCOL", "protocol"); ok {
		switch p := Protocol(strings.ToLower(v)); p {
		case ProtocolGRPC, ProtocolHTTPProtobuf:
			o.Protocol = p
		default:
			l.bad(from, "unknown %s %q: want grpc or http/protobuf", from, v)
		}
	}

	var insecure bool
	if v, from, ok := pick("INSECURE", "insecure"); ok {
		b, err := parseBool(v)
		if err != nil {
			l.bad(from, "%s %q: want true or false", from, v)
		}
		insecure = b
	}

	raw, from, _ := pick("ENDPOINT", "endpoint")
	// Only a generic endpoint gets the signal path appended.
	generic := from == "--endpoint" || from == "OTEL_EXPORTER_OTLP_ENDPOINT"
	ep, err := resolveEndpoint(raw, generic, o.Protocol, "/v1/"+name, insecure)
	if n := len(l.warnings); err != nil && l.bad(from, "%s: %v", from, err) {
		ep, _ = resolveEndpoint("", true, o.Protocol, "/v1/"+name, insecure)
		from = ""
		l.endpointWarnings = l.warnings[n:]
	}
	o.Endpoint, o.EndpointFrom = ep, from

	if v, from, ok := pick("HEADERS", "headers"); ok {
		h, err := parseKeyValues(v, true)
		if err != nil {
			l.bad(from, "%s: %v", from, err)
		}
		o.Headers = h
	}

	var tlsFrom []string // where the TLS settings came from, to blame a flag
	tlsSetting := func(setting, flag string) string {
		v, from, _ := pick(setting, flag)
		tlsFrom = append(tlsFrom, from)
		return v
	}
	o.Certificate = tlsSetting("CERTIFICATE", "certificate")
	o.ClientCertificate = tlsSetting("CLIENT_CERTIFICATE", "client-certificate")
	o.ClientKey = tlsSetting("CLIENT_KEY", "client-key")
	tlsBad := func(format string, args ...any) {
		from := "env"
		for _, f := range tlsFrom {
			if strings.HasPrefix(f, "--") {
				from = f
			}
		}
		if strings.HasPrefix(from, "--") {
			l.unusedErrs = append(l.unusedErrs, fmt.Errorf(format, args...))
		} else if l.bad(from, format, args...) {
			o.Certificate, o.ClientCertificate, o.ClientKey = "", "", ""
		}
	}
	if (o.ClientCertificate == "") != (o.ClientKey == "") {
		tlsBad("mutual TLS needs both a client certificate and a client key (--client-certificate, --client-key)")
	}
	if o.Endpoint != "" && !strings.HasPrefix(o.Endpoint, "https://") &&
		(o.Certificate != "" || o.ClientCertificate != "") {
		tlsBad("a certificate is set but the endpoint %s is plaintext; use an https:// endpoint", redactURL(o.Endpoint))
	}

	if v, from, ok := pick("TIMEOUT", "timeout"); ok {
		d, err := parseDuration(v)
		if err != nil || d == 0 {
			l.bad(from, "%s %q: want a duration above 0 such as 10s, or milliseconds", from, v)
		} else {
			o.Timeout = d
		}
	}
	if v, from, ok := pick("COMPRESSION", "compression"); ok {
		switch c := strings.ToLower(v); c {
		case "gzip", "none":
			o.Compression = c
		default:
			l.bad(from, "unknown %s %q: want gzip or none", from, v)
		}
	}
	return o
}

func (l *loader) resource(cfg *Config) {
	attrs := map[string]string{}
	if v, from, ok := l.s.lookup(flags("resource-attributes"), "OTEL_RESOURCE_ATTRIBUTES"); ok {
		// A bad entry discards the whole value, as the specification asks.
		if m, err := parseKeyValues(v, false); err != nil {
			l.bad(from, "%s: %v", from, err)
		} else {
			attrs = m
		}
	}
	if v, ok := attrs["service.name"]; ok {
		cfg.ServiceName = v
		delete(attrs, "service.name")
	}
	if v, _, ok := l.s.lookup(flags("service-name"), "OTEL_SERVICE_NAME"); ok {
		cfg.ServiceName = v
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		cfg.ResourceAttributes = append(cfg.ResourceAttributes, attribute.String(k, attrs[k]))
	}
}

// spool resolves the spool's place and bounds. Its default place is under
// the user's state directory, as XDG says.
func (l *loader) spool(cfg *Config) {
	cfg.Spool = Spool{MaxAge: DefaultSpoolMaxAge}
	if v, _, ok := l.s.lookup(flags("spool-dir"), "PI_OTEL_SPOOL_DIR"); ok {
		if !strings.EqualFold(v, "none") {
			cfg.Spool.Dir = v
		}
	} else if d := l.s.getenv("XDG_STATE_HOME"); strings.HasPrefix(d, "/") {
		cfg.Spool.Dir = filepath.Join(d, "pi-otel", "spool")
	} else if h := l.s.getenv("HOME"); h != "" {
		cfg.Spool.Dir = filepath.Join(h, ".local", "state", "pi-otel", "spool")
	}
	mib := DefaultSpoolMaxMiB
	l.integer(&mib, 1, flags("spool-max-size"), "PI_OTEL_SPOOL_MAX_SIZE")
	cfg.Spool.MaxBytes = int64(mib) << 20
	l.duration(&cfg.Spool.MaxAge, true, flags("spool-max-age"), "PI_OTEL_SPOOL_MAX_AGE")
}

func (l *loader) redact() []string {
	var pats []string
	from := "--redact"
	if v, ok := l.s.lists["redact"]; ok {
		pats = v
	} else if v := l.s.getenv("PI_OTEL_REDACT"); strings.TrimSpace(v) != "" {
		from = "PI_OTEL_REDACT"
		for line := range strings.SplitSeq(v, "\n") {
			if line = strings.TrimRight(line, "\r"); strings.TrimSpace(line) != "" {
				pats = append(pats, line)
			}
		}
	}
	for i, p := range pats {
		if _, err := regexp.Compile(p); err != nil {
			// The pattern itself may be a literal secret, so name only
			// its position and the kind of syntax error.
			why := "invalid"
			var se *syntax.Error
			if errors.As(err, &se) {
				why = string(se.Code)
			}
			if l.bad(from, "%s pattern %d is not a valid regular expression (%s); content capture is off, so that nothing it was meant to hide leaks", from, i+1, why) {
				l.noContent = true
			}
		}
	}
	return pats
}

func (l *loader) boolean(dst *bool, fl []string, envs ...string) {
	if v, from, ok := l.s.lookup(fl, envs...); ok {
		b, err := parseBool(v)
		if err != nil {
			l.bad(from, "%s %q: want true or false", from, v)
			return
		}
		*dst = b
	}
}

func (l *loader) integer(dst *int, least int, fl []string, envs ...string) {
	if v, from, ok := l.s.lookup(fl, envs...); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < least {
			l.bad(from, "%s %q: want a whole number of at least %d", from, v, least)
			return
		}
		*dst = n
	}
}

// duration reads a duration; positive ones must be more than 0.
func (l *loader) duration(dst *time.Duration, positive bool, fl []string, envs ...string) {
	if v, from, ok := l.s.lookup(fl, envs...); ok {
		d, err := parseDuration(v)
		if err != nil || (positive && d == 0) {
			l.bad(from, "%s %q: want a duration above 0 such as 5s or 250ms, or milliseconds", from, v)
			return
		}
		*dst = d
	}
}

// exporterKind reads an exporter name. The specification allows a comma
// list; pi-otel sends each signal one way, so a list must name one it knows.
func exporterKind(v string) (ExporterKind, error) {
	for _, name := range strings.Split(v, ",") {
		switch k := ExporterKind(strings.ToLower(strings.TrimSpace(name))); k {
		case ExporterOTLP, ExporterConsole, ExporterFile, ExporterNone:
			return k, nil
		}
	}
	return "", errors.New("want otlp, console, file or none")
}

func parseBool(v string) (bool, error) {
	return strconv.ParseBool(strings.ToLower(v))
}

// parseDuration reads a Go duration, or a bare number as milliseconds, the
// unit of the OTEL_* duration variables.
func parseDuration(v string) (time.Duration, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, errors.New("negative")
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, errors.New("negative")
	}
	return d, nil
}

// parseSize reads a byte size in GOMEMLIMIT's units (B, KiB, MiB, GiB,
// TiB; a bare number is bytes), or "off" as -1.
func parseSize(v string) (int64, error) {
	if strings.EqualFold(v, "off") {
		return -1, nil
	}
	num, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(v, u.suffix) {
			num, mult = strings.TrimSuffix(v, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, errors.New("not a size")
	}
	return n * mult, nil
}

// parseKeyValues reads the "k1=v1,k2=v2" lists of OTEL_EXPORTER_OTLP_HEADERS
// and OTEL_RESOURCE_ATTRIBUTES, whose keys and values are percent-encoded.
// When secret is set, errors point at an entry by position only.
func parseKeyValues(v string, secret bool) (map[string]string, error) {
	out := map[string]string{}
	for i, entry := range strings.Split(v, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		show := func() string {
			if secret {
				return fmt.Sprintf("entry %d", i+1)
			}
			return fmt.Sprintf("entry %q", entry)
		}
		k, val, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("%s is not key=value", show())
		}
		key, err1 := url.PathUnescape(strings.TrimSpace(k))
		value, err2 := url.PathUnescape(strings.TrimSpace(val))
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s has a bad percent-encoding", show())
		}
		if key == "" {
			return nil, fmt.Errorf("%s has an empty key", show())
		}
		// A control character (a CR LF pasted in) makes every export
		// fail; refuse it here rather than after the flush timeout.
		if strings.ContainsFunc(key+value, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return nil, fmt.Errorf("%s has a control character such as CR or LF", show())
		}
		out[key] = value
	}
	return out, nil
}

// resolveEndpoint turns a configured endpoint into an absolute URL whose
// scheme says whether the connection is plaintext.
func resolveEndpoint(raw string, generic bool, p Protocol, signalPath string, insecure bool) (string, error) {
	defPort := "4317"
	if p == ProtocolHTTPProtobuf {
		defPort = "4318"
	}
	if raw == "" {
		raw, generic = "http://localhost:"+defPort, true
	}
	var u *url.URL
	if strings.Contains(raw, "://") {
		var err error
		if u, err = url.Parse(raw); err != nil {
			return "", fmt.Errorf("%q is not an endpoint (not a URL); %s", redactURL(raw), endpointForm)
		}
		u.Scheme = strings.ToLower(u.Scheme)
		if u.Scheme != "http" && u.Scheme != "https" {
			return "", fmt.Errorf("%q is not an endpoint (the scheme must be http or https); %s", redactURL(raw), endpointForm)
		}
		if u.Host == "" {
			return "", fmt.Errorf("%q is not an endpoint (no host); %s", redactURL(raw), endpointForm)
		}
		if err := checkHostPort(u.Host, true); err != nil {
			return "", fmt.Errorf("%q is not an endpoint (%v); %s", redactURL(raw), err, endpointForm)
		}
	} else {
		host := raw
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			return "", fmt.Errorf("%q is not an endpoint (a path needs http:// or https://); %s", raw, endpointForm)
		}
		h, _, err := net.SplitHostPort(host)
		if err != nil {
			h = strings.Trim(host, "[]")
			host = net.JoinHostPort(h, defPort)
		}
		if err := checkHostPort(host, false); err != nil {
			return "", fmt.Errorf("%q is not an endpoint (%v); %s", raw, err, endpointForm)
		}
		scheme := "https"
		if insecure || isLoopback(h) {
			scheme = "http"
		}
		u = &url.URL{Scheme: scheme, Host: host}
	}
	if p == ProtocolGRPC {
		// gRPC has no path; keep only what picks the connection.
		return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String(), nil
	}
	switch {
	case generic:
		u.Path = strings.TrimSuffix(u.Path, "/") + signalPath
		u.RawPath = ""
	case u.Path == "":
		u.Path = "/"
	}
	return u.String(), nil
}

// endpointForm is what an endpoint should look like, for error messages.
const endpointForm = "want http://HOST:PORT, https://HOST:PORT or HOST:PORT, such as http://localhost:4317"

// checkHostPort refuses a host that no connection could ever reach, such
// as "not a url" or "::::", so the mistake is named at start-up instead of
// surfacing as a failed export after the flush timeout. The port may be
// missing only from a URL, where the scheme implies it.
func checkHostPort(hostport string, portOptional bool) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		if !portOptional || strings.Count(hostport, ":") > 0 && !strings.HasSuffix(hostport, "]") {
			return errors.New("not HOST:PORT")
		}
		host = strings.Trim(hostport, "[]")
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return errors.New("the port must be a number from 1 to 65535")
	}
	if host == "" {
		return errors.New("no host")
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 {
			return errors.New("not a host name or IP address")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return errors.New("not a host name or IP address")
			}
		}
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isStdout(path string) bool {
	switch path {
	case "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1":
		return true
	}
	return false
}

// redactURL hides a password in a URL's user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}
