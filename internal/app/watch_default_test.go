package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/summaryline"
	"github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// TestWatchDefaultFoldersIncludeOhMyPi: with no folders given, watch
// follows Pi's session folder and oh-my-pi's (~/.omp/agent/sessions), and
// traces the sessions of both.
func TestWatchDefaultFoldersIncludeOhMyPi(t *testing.T) {
	t.Parallel()
	const piSession, ompSession = "01a23048-25a0-70a6-ac07-e16e1f06ff47", "01a244b3-a5bf-7517-b3db-648564ce45d0"
	bin := piOtel(t)
	home := t.TempDir()
	put := func(rel, capture string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := repo.Read(t, "testdata/sessions/"+capture)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	put(".pi/agent/sessions/--proj--/pi.jsonl", "pi-1.6.0/text.jsonl")
	put(".omp/agent/sessions/-proj/omp.jsonl", "omp-18.2.3/bash-tool.jsonl")
	state := filepath.Join(t.TempDir(), "watch.json")
	w := startWatch(t, bin, append(watchEnv(t, "OTEL_TRACES_EXPORTER=none"), "HOME="+home), "--state", state, "--settle", "1s", "--since", "all")
	readState := func() string { st, _ := os.ReadFile(state); return string(st) }
	wait.For(t, time.Minute, func() bool {
		st := readState()
		// Each session's runs are in the state once they are traced.
		return strings.Contains(st, `{"id":"`+piSession+`","runs":`) && strings.Contains(st, `{"id":"`+ompSession+`","runs":`)
	}, func() string { return "the sessions' runs were never committed: " + readState() + "\n" + w.stderr() })
	w.signal(syscall.SIGTERM)
	if code := w.exit(); code != 0 {
		t.Fatalf("exit %d:\n%s", code, w.stderr())
	}
	if s, ok := summaryline.Parse([]byte(w.stderr())); !ok || s.Traces != 2 {
		t.Errorf("summary %q: want a run from each folder\n%s", s.Line, w.stderr())
	}
}
