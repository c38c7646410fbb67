package config

import (
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"
)

// loadTable loads one table's settings from one flag (or, with env set,
// its first variable) and reports the setting's value, the warnings and
// the error.
func loadTable(t *testing.T, table []setting, flagName, value string, env bool) (time.Duration, []string, error) {
	t.Helper()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	register(fs, table)
	getenv := func(string) string { return "" }
	if env {
		name := tableRow(table, flagName).envs[0]
		getenv = func(k string) string { return map[string]string{name: value}[k] }
	} else if err := fs.Parse([]string{"--" + flagName, value}); err != nil {
		t.Fatal(err)
	}
	switch {
	case len(table) > 0 && &table[0] == &settings[0]:
		cfg, err := Load(fs, getenv)
		return cfg.MetricsInterval, cfg.Warnings, err
	case len(table) > 0 && &table[0] == &watchSettings[0]:
		w, err := LoadWatch(fs, getenv)
		if flagName == "settle" {
			return w.Settle, w.Warnings, err
		}
		return w.Poll, w.Warnings, err
	default:
		r, err := LoadReplay(fs, getenv)
		return r.Poll, r.Warnings, err
	}
}

// The settings that set how often something runs refuse a flag below
// their floor, and ignore such a variable with a warning, keeping the
// default, as every variable of ours does; the floor itself is taken.
func TestDurationFloors(t *testing.T) {
	for _, c := range []struct {
		table []setting
		flag  string
		def   time.Duration
	}{
		{settings, "metrics-interval", 60 * time.Second},
		{watchSettings, "settle", DefaultSettle},
		{watchSettings, "poll", 0},
		{replaySettings, "poll", 250 * time.Millisecond},
	} {
		r := tableRow(c.table, c.flag)
		if r.floor < 10*time.Millisecond {
			t.Errorf("--%s has no floor", c.flag)
			continue
		}
		for _, low := range []string{"1ns", (r.floor - 1).String()} {
			if _, _, err := loadTable(t, c.table, c.flag, low, false); err == nil ||
				!strings.Contains(err.Error(), `--`+c.flag+` "`+low+`"`) || !strings.Contains(err.Error(), "at least "+r.floor.String()) {
				t.Errorf("--%s %s: error %v, want one naming the flag, the value and the floor", c.flag, low, err)
			}
			got, warnings, err := loadTable(t, c.table, c.flag, low, true)
			if err != nil || got != c.def || len(warnings) != 1 || !strings.Contains(warnings[0], "ignoring "+r.envs[0]) {
				t.Errorf("%s=%s: %s, %v, %q; want the default %s and one warning", r.envs[0], low, got, err, warnings, c.def)
			}
		}
		for _, env := range []bool{false, true} {
			if got, _, err := loadTable(t, c.table, c.flag, r.floor.String(), env); err != nil || got != r.floor {
				t.Errorf("--%s at its floor %s (env %v): %s, %v", c.flag, r.floor, env, got, err)
			}
		}
	}
	// watch's --poll 0 is inotify, as before.
	if got, _, err := loadTable(t, watchSettings, "poll", "0", false); err != nil || got != 0 {
		t.Errorf("--poll 0: %s, %v", got, err)
	}
}

// A floor is said in help and docs, where the settings table's notes go.
func TestFloorIsInHelp(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	RegisterWatchFlags(fs)
	if u := fs.Lookup("poll").Usage; !strings.HasSuffix(u, "; at least 100ms)") {
		t.Errorf("watch --poll usage %q does not state the floor", u)
	}
	for _, d := range Flags() {
		if d.Name == "metrics-interval" && !strings.HasSuffix(d.Text, "; at least 100ms") {
			t.Errorf("--metrics-interval help %q does not state the floor", d.Text)
		}
	}
}

func TestLoadReplay(t *testing.T) {
	r, err := LoadReplay(nil, nil)
	if want := (Replay{Poll: 250 * time.Millisecond, MaxLine: 256 << 20}); err != nil || !reflect.DeepEqual(r, want) {
		t.Errorf("defaults: %+v, %v; want %+v", r, err, want)
	}
	env := map[string]string{"PI_OTEL_FOLLOW": "TRUE", "PI_OTEL_FOLLOW_POLL": "2s", "PI_OTEL_MAX_LINE_SIZE": "1GiB"}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	RegisterReplayFlags(fs)
	if err := fs.Parse([]string{"--poll", "500ms", "--max-line-size", "4KiB"}); err != nil {
		t.Fatal(err)
	}
	r, err = LoadReplay(fs, func(k string) string { return env[k] })
	if want := (Replay{Follow: true, Poll: 500 * time.Millisecond, MaxLine: 4 << 10}); err != nil || !reflect.DeepEqual(r, want) {
		t.Errorf("flags and variables: %+v, %v; want %+v", r, err, want)
	}
	r, err = LoadReplay(nil, func(k string) string { return map[string]string{"PI_OTEL_MAX_LINE_SIZE": "off"}[k] })
	if err != nil || r.MaxLine != 0 {
		t.Errorf("off: %+v, %v", r, err)
	}

	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	RegisterReplayFlags(fs)
	if err := fs.Parse([]string{"--max-line-size", "lots", "--poll", "-1s"}); err != nil {
		t.Fatal(err)
	}
	_, err = LoadReplay(fs, nil)
	if err == nil || !strings.Contains(err.Error(), `--max-line-size "lots": want a size`) || !strings.Contains(err.Error(), `--poll "-1s"`) {
		t.Errorf("bad flags: %v, want both named", err)
	}
	bad := map[string]string{"PI_OTEL_FOLLOW": "sure", "PI_OTEL_MAX_LINE_SIZE": "0"}
	r, err = LoadReplay(nil, func(k string) string { return bad[k] })
	if err != nil || r.Follow || r.MaxLine != 256<<20 || len(r.Warnings) != 2 {
		t.Errorf("bad variables: %+v, %v; want the defaults and two warnings", r, err)
	}
}
