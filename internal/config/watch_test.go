package config

import (
	"flag"
	"reflect"
	"testing"
	"time"
)

func TestLoadWatch(t *testing.T) {
	env := map[string]string{"PI_OTEL_SETTLE": "5s", "PI_OTEL_SINCE": "7d", "PI_OTEL_STATE": "/tmp/s.json"}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	RegisterWatchFlags(fs)
	if err := fs.Parse([]string{"--settle", "2s", "--poll", "1s"}); err != nil {
		t.Fatal(err)
	}
	w, err := LoadWatch(fs, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	want := Watch{State: "/tmp/s.json", Since: 7 * 24 * time.Hour, Settle: 2 * time.Second, CloseAfter: DefaultCloseAfter, Poll: time.Second}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("LoadWatch = %+v, want %+v", w, want)
	}

	w, err = LoadWatch(nil, func(k string) string { return map[string]string{"PI_OTEL_SINCE": "ALL"}[k] })
	if err != nil || !w.SinceAll || w.Settle != DefaultSettle {
		t.Errorf("since all: %+v, %v", w, err)
	}

	for _, bad := range []map[string]string{
		{"PI_OTEL_SINCE": "yesterday"},
		{"PI_OTEL_SETTLE": "1m", "PI_OTEL_CLOSE_AFTER": "10s"},
	} {
		if _, err := LoadWatch(nil, func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v loaded without error", bad)
		}
	}
	// A variable of ours with a value we cannot use warns and keeps the
	// default, as every variable does (see config.Load).
	for _, bad := range []map[string]string{
		{"PI_OTEL_SETTLE": "0"},
		{"PI_OTEL_POLL": "-1s"},
	} {
		w, err := LoadWatch(nil, func(k string) string { return bad[k] })
		if err != nil || len(w.Warnings) != 1 || w.Settle != DefaultSettle || w.Poll != 0 {
			t.Errorf("%v: %+v, %v", bad, w, err)
		}
	}
}
