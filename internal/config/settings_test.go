package config

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/telemetry"
)

// TestRenameFollows: a variable's name is spelled once, in the settings
// table. Renamed there, the loader reads the new name and no longer the
// old one, and the flag's usage and help name the new one.
func TestRenameFollows(t *testing.T) {
	r := row("flush-timeout")
	old := r.envs
	r.envs = []string{"PI_OTEL_RENAMED_FLUSH_TIMEOUT"}
	t.Cleanup(func() { r.envs = old })

	cfg, err := Load(nil, func(k string) string {
		return map[string]string{"PI_OTEL_RENAMED_FLUSH_TIMEOUT": "7s", old[0]: "9s"}[k]
	})
	if err != nil || cfg.FlushTimeout != 7*time.Second {
		t.Errorf("FlushTimeout = %s, %v; want 7s from the renamed variable", cfg.FlushTimeout, err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	RegisterFlags(fs)
	if u := fs.Lookup("flush-timeout").Usage; !strings.Contains(u, "PI_OTEL_RENAMED_FLUSH_TIMEOUT") || strings.Contains(u, old[0]) {
		t.Errorf("usage %q does not follow the rename", u)
	}
	for _, d := range Flags() {
		if d.Name == "flush-timeout" && !slices.Equal(d.Envs, r.envs) {
			t.Errorf("help names %v", d.Envs)
		}
	}
}

// TestDefaultsFromTable: Load takes every default from the table; the
// constants other packages use must say the same.
func TestDefaultsFromTable(t *testing.T) {
	cfg, err := Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Traces.OTLP.Timeout != telemetry.DefaultOTLPTimeout || cfg.MaxContentLength != DefaultMaxContentLength {
		t.Errorf("table defaults %s, %d; constants %s, %d", cfg.Traces.OTLP.Timeout, cfg.MaxContentLength,
			telemetry.DefaultOTLPTimeout, DefaultMaxContentLength)
	}
	// The pipeline fills a hand-made Config's zero settings with its own
	// defaults: the command line's, from this table.
	d := telemetry.Defaults()
	if cfg.ServiceName != d.ServiceName || cfg.Batch != d.Batch || cfg.MetricsInterval != d.MetricsInterval ||
		cfg.Temporality != d.Temporality {
		t.Errorf("table defaults %q %+v %s %s; telemetry.Defaults %q %+v %s %s", cfg.ServiceName, cfg.Batch,
			cfg.MetricsInterval, cfg.Temporality, d.ServiceName, d.Batch, d.MetricsInterval, d.Temporality)
	}
	w, err := LoadWatch(nil, nil)
	if err != nil || w.Settle != DefaultSettle || w.CloseAfter != DefaultCloseAfter {
		t.Errorf("watch defaults %+v, %v", w, err)
	}
	// Every stated default in the parser's syntax parses (read panics on
	// one that does not, when the setting is loaded).
	for _, table := range [][]setting{settings, watchSettings, replaySettings} {
		for _, s := range table {
			if s.def != "" && s.defText != "" {
				t.Errorf("--%s states its default twice", s.flag)
			}
			if len(s.envs) == 0 {
				t.Errorf("--%s has no variable", s.flag)
			}
			if (s.parse == asChoice) != (len(s.choices) > 0) {
				t.Errorf("--%s: choices %v for parser %d", s.flag, s.choices, s.parse)
			}
		}
	}
}
