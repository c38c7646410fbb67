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
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// The unit the .deb and .rpm install; it runs the packaged binary.
const packaged = "packaging/pi-otel-watch.service"

// TestUnitExecStart parses the units' ExecStart with pi-otel watch's own
// flag set: every flag must exist and take its value, and the command
// must be "pi-otel watch".
func TestUnitExecStart(t *testing.T) {
	for _, path := range []string{"pi-otel-watch.service", repo.Path(packaged)} {
		t.Run(path, func(t *testing.T) { checkExecStart(t, path) })
	}
}

// TestPackagedUnit: the packages' unit is this example but for its
// opening comment and the binary it runs, /usr/bin/pi-otel.
func TestPackagedUnit(t *testing.T) {
	body := func(b []byte) []string {
		var out []string
		for i, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "#") && len(out) == 0 && i < 5 {
				continue // the opening comment
			}
			if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
				bin, args, _ := strings.Cut(v, " ")
				l = "ExecStart=BIN " + args
				if bin != "%h/go/bin/pi-otel" && bin != "/usr/bin/pi-otel" {
					t.Errorf("ExecStart runs %s", bin)
				}
			}
			out = append(out, l)
		}
		return out
	}
	example, pkg := body(repo.Read(t, "examples/watch-systemd/pi-otel-watch.service")), body(repo.Read(t, packaged))
	if strings.Join(example, "\n") != strings.Join(pkg, "\n") {
		t.Errorf("%s differs from the example beyond its comment and binary:\n%s\n---\n%s", packaged,
			strings.Join(pkg, "\n"), strings.Join(example, "\n"))
	}
	if !strings.Contains(string(repo.Read(t, packaged)), "ExecStart=/usr/bin/pi-otel watch ") {
		t.Errorf("%s does not run /usr/bin/pi-otel, where the packages install it", packaged)
	}
}

func checkExecStart(t *testing.T, path string) {
	f, err := os.Open(path)
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
