package config

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pi-otel/pi-otel/internal/telemetry"
)

// read resolves one setting into dst: the row's default, then the value
// given, read by parse. A value parse refuses is reported with msg (which
// takes the source and the value) and leaves dst as it was.
func read[T any](l *loader, dst *T, row *setting, parse func(string) (T, error), msg string) {
	if row.def != "" {
		d, err := parse(row.def)
		if err != nil {
			panic(fmt.Sprintf("config: the default %q of --%s does not parse: %v", row.def, row.flag, err))
		}
		*dst = d
	}
	if v, from, ok := l.get(row); ok {
		x, err := parse(v)
		if err != nil {
			l.bad(from, msg, from, v)
			return
		}
		*dst = x
	}
}

func (l *loader) boolean(dst *bool, row *setting) {
	read(l, dst, row, parseBool, "%s %q: want true or false")
}

// integer reads an asCount or asLength setting.
func (l *loader) integer(dst *int, row *setting) {
	least := row.parse.least()
	read(l, dst, row, func(v string) (int, error) {
		n, err := strconv.Atoi(v)
		if err == nil && n < least {
			err = errors.New("too small")
		}
		return n, err
	}, "%s %q: want a whole number of at least "+strconv.Itoa(least))
}

// duration reads an asDuration or asPositive setting.
func (l *loader) duration(dst *time.Duration, row *setting) {
	want := "want a duration above 0 such as 5s or 250ms, or milliseconds"
	switch {
	case row.floor > 0 && row.parse == asPositive:
		want = "want a duration of at least " + row.floor.String() + " such as 5s, or milliseconds"
	case row.floor > 0:
		want = "want 0 or a duration of at least " + row.floor.String() + " such as 5s, or milliseconds"
	}
	read(l, dst, row, durationParser(row.parse == asPositive, row.floor), "%s %q: "+want)
}

// durationParser is parseDuration, refusing 0 when positive, and values
// above 0 but below floor.
func durationParser(positive bool, floor time.Duration) func(string) (time.Duration, error) {
	return func(v string) (time.Duration, error) {
		d, err := parseDuration(v)
		switch {
		case err != nil:
		case positive && d == 0:
			err = errors.New("zero")
		case d > 0 && d < floor:
			err = errors.New("below the floor")
		}
		return d, err
	}
}

// choice reads an asChoice setting.
func choice[T ~string](l *loader, dst *T, row *setting) {
	read(l, dst, row, func(v string) (T, error) {
		if c := strings.ToLower(v); slices.Contains(row.choices, c) {
			return T(c), nil
		}
		return "", errors.New("no choice")
	}, "unknown %s %q: want "+orList(row.choices))
}

// exporterKind reads an exporter name. The specification allows a comma
// list; pi-otel sends each signal one way, so a list must name one it knows.
func exporterKind(v string) (telemetry.ExporterKind, error) {
	for _, name := range strings.Split(v, ",") {
		switch k := telemetry.ExporterKind(strings.ToLower(strings.TrimSpace(name))); k {
		case telemetry.ExporterOTLP, telemetry.ExporterConsole, telemetry.ExporterFile, telemetry.ExporterNone:
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
	n, err := strconv.ParseInt(v, 10, 64)
	d := time.Duration(n) * time.Millisecond
	if err != nil {
		d, err = time.ParseDuration(v)
	}
	if err == nil && d < 0 {
		d, err = 0, errors.New("negative")
	}
	return d, err
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
