// Package watchsystemd holds the systemd user unit for pi-otel watch; the
// test keeps the unit true to the command's real flags.
package watchsystemd

import (
	"bufio"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/config"
)

// TestUnitExecStart parses the unit's ExecStart with pi-otel watch's own
// flag set: every flag must exist and take its value, and the command
// must be "pi-otel watch".
func TestUnitExecStart(t *testing.T) {
	f, err := os.Open("pi-otel-watch.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var exec []string
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			exec = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			k, val, _ := strings.Cut(v, "=")
			env[k] = val
		}
	}
	if len(exec) < 2 || !strings.HasSuffix(exec[0], "/pi-otel") || exec[1] != "watch" {
		t.Fatalf("ExecStart %q: want pi-otel watch", exec)
	}
	fs := flag.NewFlagSet("pi-otel watch", flag.ContinueOnError)
	config.RegisterFlags(fs)
	config.RegisterWatchFlags(fs)
	if err := fs.Parse(exec[2:]); err != nil {
		t.Fatalf("ExecStart flags: %v", err)
	}
	if fs.NArg() != 0 {
		t.Errorf("ExecStart has arguments %q after its flags", fs.Args())
	}
	// The flags and the unit's variables load as pi-otel would load them.
	getenv := func(k string) string { return env[k] }
	if _, err := config.Load(fs, getenv); err != nil {
		t.Errorf("the unit's settings do not load: %v", err)
	}
	w, err := config.LoadWatch(fs, getenv)
	if err != nil {
		t.Fatalf("the unit's watch settings do not load: %v", err)
	}
	if !strings.HasPrefix(w.State, "%S/") {
		t.Errorf("state %q: want it under %%S, the user's state directory", w.State)
	}
}
