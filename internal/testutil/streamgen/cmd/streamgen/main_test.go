package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1GB": 1e9, "100MB": 1e8, "512KiB": 512 << 10, "2MiB": 2 << 20, "1.5GiB": 3 << 29, "42": 42, "7B": 7, "3k": 3000} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "GB", "-1MB", "ten"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestWritesAtLeastSize(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run([]string{"-size", "200KB", "-stats"}, nil, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	if out.Len() < 200e3 || !strings.Contains(errs.String(), "message_update/text_delta") {
		t.Fatalf("%d bytes; stats %q", out.Len(), errs.String())
	}
}
