package config

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/pi-otel/pi-otel/internal/telemetry"
)

// Load resolves the configuration from the flags given on fs (registered with
// RegisterFlags; fs may be nil) and from the environment as seen through
// getenv (os.Getenv in production). A flag given on the command line wins
// over the environment, which wins over the default. Error messages never
// contain header values.
func Load(fs *flag.FlagSet, getenv func(string) string) (Config, error) {
	l := &loader{s: newSources(fs, getenv)}
	cfg := l.load()
	// Traces and metrics read the same generic settings: say each once.
	l.errs, l.warnings = unique(l.errs, error.Error), unique(l.warnings, func(w string) string { return w })
	return loaded(l, &cfg, &cfg.Warnings)
}

// loaded is what a Load function returns: v, read by l, with the warnings
// l gave, or every error l met.
func loaded[T any](l *loader, v *T, warnings *[]string) (T, error) {
	if err := errors.Join(l.errs...); err != nil {
		var zero T
		return zero, err
	}
	*warnings = l.warnings
	return *v, nil
}

// unique keeps the first of the items with the same text.
func unique[T any](items []T, text func(T) string) []T {
	var out []T
	seen := map[string]bool{}
	for _, it := range items {
		if t := text(it); !seen[t] {
			seen[t] = true
			out = append(out, it)
		}
	}
	return out
}

// loader collects every error rather than stopping at the first, so a user
// fixes a bad setup in one go.
type loader struct {
	s *sources
	// signal ("traces"), while reading one signal's OTLP settings.
	signal   string
	errs     []error
	warnings []string
	// noContent: a redaction pattern from the environment was unusable.
	noContent bool
	// unusedErrs are flag settings that only conflict when OTLP is used.
	unusedErrs []error
	// endpointWarnings says why an endpoint from the environment was ignored.
	endpointWarnings []string
}

// get looks a setting up. While reading one signal's OTLP settings, the
// signal's own flag and variable (--traces-endpoint,
// OTEL_EXPORTER_OTLP_TRACES_HEADERS) come before the generic ones.
func (l *loader) get(row *setting) (val, from string, ok bool) {
	if l.signal == "" || !strings.HasPrefix(row.envs[0], otlpPrefix) {
		return l.s.get(row)
	}
	flags := []string{row.flag}
	envs := []string{signalEnv(row.envs[0], strings.ToUpper(l.signal))}
	if own := findRow(l.signal + "-" + row.flag); own != nil {
		flags = []string{own.flag, row.flag}
		envs = own.envs
	}
	return l.s.lookup(flags, slices.Concat(envs, row.envs)...)
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
	var cfg Config
	cfg.Traces = l.signalOf("traces", telemetry.ExporterConsole, true)
	cfg.Metrics = l.signalOf("metrics", telemetry.ExporterNone, true)
	cfg.Logs = l.signalOf("logs", telemetry.ExporterNone, false)

	l.duration(&cfg.MetricsInterval, row("metrics-interval"))
	choice(l, &cfg.Temporality, row("metrics-temporality"))

	l.resource(&cfg)

	l.boolean(&cfg.Quiet, row("quiet"))
	cfg.NoColor = l.s.getenv("NO_COLOR") != ""
	l.duration(&cfg.FlushTimeout, row("flush-timeout"))

	l.boolean(&cfg.CaptureContent, row("capture-content"))
	l.integer(&cfg.MaxContentLength, row("max-content-length"))
	l.integer(&cfg.AttributeValueLengthLimit, row("attribute-value-length-limit"))
	cfg.Redact = l.redact()
	if l.noContent {
		cfg.CaptureContent, cfg.Redact = false, nil
	}

	l.spool(&cfg)

	optIn, _, _ := l.get(row("semconv-stability-opt-in"))
	cfg.GenAILatest = slices.ContainsFunc(strings.Split(optIn, ","), func(entry string) bool {
		return strings.EqualFold(strings.TrimSpace(entry), GenAILatestOptIn)
	})

	l.integer(&cfg.Batch.MaxQueueSize, row("queue-size"))
	l.integer(&cfg.Batch.MaxExportBatchSize, row("max-export-batch-size"))
	l.duration(&cfg.Batch.ScheduleDelay, row("schedule-delay"))
	l.duration(&cfg.Batch.ExportTimeout, row("export-timeout"))
	read(l, &cfg.MemoryLimit, row("memory-limit"), parseSize,
		"%s %q: want a size such as 64MiB (B, KiB, MiB, GiB) or off")
	choice(l, &cfg.Propagation, row("propagation"))
	l.duration(&cfg.PropagationWait, row("propagation-wait"))
	cfg.PropagationDir, _, _ = l.get(row("propagation-dir"))
	// The SDK clamps the batch to the queue the same way.
	cfg.Batch.MaxExportBatchSize = min(cfg.Batch.MaxExportBatchSize, cfg.Batch.MaxQueueSize)
	return cfg
}

// signalOf resolves the exporter, file and OTLP settings of one signal,
// name being the flags' prefix ("traces"). anyEndpoint says whether the
// generic endpoint, not only the signal's own, turns an unnamed exporter to
// otlp.
func (l *loader) signalOf(name string, fallback telemetry.ExporterKind, anyEndpoint bool) telemetry.Signal {
	var sig telemetry.Signal
	fileRow, exporterRow := row(name+"-file"), row(name+"-exporter")
	file, fileFrom, hasFile := l.s.get(fileRow)
	if hasFile && isStdout(file) {
		hasFile = !l.bad(fileFrom, "%s %q: stdout belongs to pi; use - for stderr", fileFrom, file)
	}
	if hasFile {
		sig.File = file
	}
	own, generic := row(name+"-endpoint"), row("endpoint")
	endpointFlags, endpointEnvs := []string{own.flag}, own.envs
	if anyEndpoint {
		endpointFlags = append(endpointFlags, generic.flag)
		endpointEnvs = slices.Concat(endpointEnvs, generic.envs)
	}
	_, _, hasEndpoint := l.s.lookup(endpointFlags, endpointEnvs...)

	// OTLP settings only matter, and only fail the load, when OTLP is used:
	// a stray OTEL_EXPORTER_OTLP_CERTIFICATE must not break --traces-exporter console.
	// A flag's unusable value is refused all the same: the user typed it,
	// and "--protocol bogus" must not pass because no endpoint is set.
	sub := &loader{s: l.s, signal: name}
	sig.OTLP = sub.otlp()
	l.errs = append(l.errs, sub.errs...)
	// An ignored endpoint is as good as unset: it must not turn OTLP on
	// and leave pi-otel waiting on the default one at exit. Its warning
	// is shown either way.
	if hasEndpoint && sig.OTLP.EndpointFrom == "" {
		hasEndpoint = false
		l.warnings = append(l.warnings, sub.endpointWarnings...)
	}

	v, expFrom, ok := l.s.get(exporterRow)
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
			sig.Exporter = telemetry.ExporterFile
		case hasEndpoint:
			sig.Exporter = telemetry.ExporterOTLP
		default:
			sig.Exporter = fallback
		}
	}
	if sig.Exporter == telemetry.ExporterFile && sig.File == "" {
		if l.bad(expFrom, "--%s file needs --%s PATH (or %s); use - for stderr", exporterRow.flag, fileRow.flag, fileRow.envs[0]) {
			sig.Exporter = fallback
		}
	}

	if sig.Exporter == telemetry.ExporterOTLP {
		l.errs = append(l.errs, sub.unusedErrs...)
		l.warnings = append(l.warnings, sub.warnings...)
	}
	return sig
}

func isStdout(path string) bool {
	return slices.Contains([]string{"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"}, path)
}

// otlp resolves the OTLP settings of l.signal: for each, the signal's own
// flag, then the generic flag, then OTEL_EXPORTER_OTLP_<SIGNAL>_X, then
// OTEL_EXPORTER_OTLP_X (see get).
func (l *loader) otlp() telemetry.OTLP {
	var o telemetry.OTLP
	choice(l, &o.Protocol, row("protocol"))

	var insecure bool
	l.boolean(&insecure, row("insecure"))

	endpoint := row("endpoint")
	raw, from, _ := l.get(endpoint)
	// Only a generic endpoint gets the signal path appended.
	generic := from == "--"+endpoint.flag || slices.Contains(endpoint.envs, from)
	signalPath := "/v1/" + l.signal
	ep, err := resolveEndpoint(raw, generic, o.Protocol, signalPath, insecure)
	if n := len(l.warnings); err != nil && l.bad(from, "%s: %v", from, err) {
		ep, _ = resolveEndpoint("", true, o.Protocol, signalPath, insecure)
		from = ""
		l.endpointWarnings = l.warnings[n:]
	}
	o.Endpoint, o.EndpointFrom = ep, from

	if v, from, ok := l.get(row("headers")); ok {
		h, err := parseKeyValues(v, true)
		if err != nil {
			l.bad(from, "%s: %v", from, err)
		}
		o.Headers = h
	}

	var tlsFrom []string // where the TLS settings came from, to blame a flag
	tlsSetting := func(flag string) string {
		v, from, _ := l.get(row(flag))
		tlsFrom = append(tlsFrom, from)
		return v
	}
	o.Certificate = tlsSetting("certificate")
	o.ClientCertificate = tlsSetting("client-certificate")
	o.ClientKey = tlsSetting("client-key")
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

	read(l, &o.Timeout, row("timeout"), durationParser(true, 0),
		"%s %q: want a duration above 0 such as 10s, or milliseconds")
	choice(l, &o.Compression, row("compression"))
	return o
}

func (l *loader) resource(cfg *Config) {
	attrs := map[string]string{}
	if v, from, ok := l.get(row("resource-attributes")); ok {
		// A bad entry discards the whole value, as the specification asks.
		if m, err := parseKeyValues(v, false); err != nil {
			l.bad(from, "%s: %v", from, err)
		} else {
			attrs = m
		}
	}
	// service.name in the attributes wins over the default, and the
	// setting of its own over both.
	name := row("service-name")
	cfg.ServiceName = name.def
	if v, ok := attrs["service.name"]; ok {
		cfg.ServiceName = v
		delete(attrs, "service.name")
	}
	if v, _, ok := l.get(name); ok {
		cfg.ServiceName = v
	}
	// The user and team of their own settings win over the attributes'.
	for _, w := range []struct {
		flag, key string
		to        *string
	}{{"user", "enduser.id", &cfg.User}, {"team", "pi.team", &cfg.Team}} {
		// get trims what it returns: a blank setting is none.
		v, _, _ := l.get(row(w.flag))
		*w.to = cmp.Or(v, attrs[w.key])
		if *w.to != "" {
			attrs[w.key] = *w.to
		}
	}
	cfg.UserPseudonymKey, _, _ = l.get(row("user-pseudonym-key"))
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		cfg.ResourceAttributes = append(cfg.ResourceAttributes, attribute.String(k, attrs[k]))
	}
}

// spool resolves the spool's place and bounds. Its default place is under
// the user's state directory, as XDG says.
func (l *loader) spool(cfg *Config) {
	if v, _, ok := l.get(row("spool-dir")); ok {
		if !strings.EqualFold(v, "none") {
			cfg.Spool.Dir = v
		}
	} else if d := l.s.getenv("XDG_STATE_HOME"); strings.HasPrefix(d, "/") {
		cfg.Spool.Dir = filepath.Join(d, "pi-otel", "spool")
	} else if h := l.s.getenv("HOME"); h != "" {
		cfg.Spool.Dir = filepath.Join(h, ".local", "state", "pi-otel", "spool")
	}
	var mib int
	l.integer(&mib, row("spool-max-size"))
	cfg.Spool.MaxBytes = int64(mib) << 20
	l.duration(&cfg.Spool.MaxAge, row("spool-max-age"))
}

// redact reads the patterns of --redact, or of its variable, one per line.
func (l *loader) redact() []string {
	r := row("redact")
	var pats []string
	from := "--" + r.flag
	if v, ok := l.s.lists[r.flag]; ok {
		pats = v
	} else if env := r.envs[0]; strings.TrimSpace(l.s.getenv(env)) != "" {
		from = env
		for line := range strings.SplitSeq(l.s.getenv(env), "\n") {
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
			if se, ok := errors.AsType[*syntax.Error](err); ok {
				why = string(se.Code)
			}
			if l.bad(from, "%s pattern %d is not a valid regular expression (%s); content capture is off, so that nothing it was meant to hide leaks", from, i+1, why) {
				l.noContent = true
			}
		}
	}
	return pats
}
