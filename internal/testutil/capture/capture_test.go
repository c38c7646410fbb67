//go:build realstack

package capture

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/pitest"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

var (
	update      = flag.Bool("update", false, "run the real Pi and rewrite the captures")
	capturesDir = flag.String("captures", repo.Path("testdata/captures"), "directory of the captures")
)

// versionDirs maps the Pi env var to its capture directory.
var versionDirs = map[string]string{
	pitest.EnvPi:    "pi-1.6.0",
	pitest.EnvPi103: "pi-1.0.3",
	pitest.EnvPi073: "pi-0.73.x",
}

func versions(s Scenario) []string {
	if len(s.Versions) == 0 {
		return []string{pitest.EnvPi}
	}
	return s.Versions
}

func TestCapture(t *testing.T) {
	for _, s := range append(Scenarios(), RPCScenarios()...) {
		for _, v := range versions(s) {
			dir := filepath.Join(*capturesDir, versionDirs[v])
			t.Run(versionDirs[v]+"/"+s.Name, func(t *testing.T) {
				var c *Capture
				if *update {
					c = record(t, s, v, dir)
				} else {
					var err error
					if c, err = Load(dir, s.Name); err != nil {
						t.Fatalf("capture missing (re-record with `go test -tags realstack ./internal/testutil/capture -run TestCapture -args -update`): %v", err)
					}
				}
				verify(t, s, c, v)
			})
		}
	}
}

func record(t *testing.T, s Scenario, piVar, dir string) *Capture {
	model, err := modelServer(s)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	m := pitest.DefaultModel()
	if s.Model != nil {
		s.Model(&m)
	}
	env := pitest.New(t, model.URL(), pitest.WithModel(m), pitest.WithSettings(s.Settings), pitest.WithPi(pitest.Lookup(t, piVar)))
	ver, err := piVersion(env)
	if err != nil {
		t.Fatal(err)
	}
	args := env.Args(s.Args...)
	if s.Prepare != nil {
		extra, err := s.Prepare(env)
		if err != nil {
			t.Fatal(err)
		}
		args = env.Args(append(extra, s.Args...)...)
	}
	res, err := run(runSpec{env: env, args: args, onLine: s.OnLine, rpc: s.RPC})
	if err != nil {
		t.Fatalf("%v\nstdout so far:\n%s", err, tail(res.stdout))
	}
	c := &Capture{
		Meta: Meta{
			Scenario: s.Name, Description: s.Description, PiVersion: ver, Mode: s.Mode(),
			Args: append([]string{"pi"}, args...), ExitCode: res.exitCode, Signal: res.signal,
			Stderr: res.stderr, ModelRequests: len(model.ChatRequests()), Requests: describe(model.ChatRequests()), ScriptErrors: model.ScriptErrors(),
		},
		Stdout: res.stdout,
		Stdin:  res.stdin,
	}
	if err := (Recorder{Dir: dir}).write(c); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: exit %d, %d model requests, %d bytes", s.Name, res.exitCode, c.Meta.ModelRequests, len(res.stdout))
	return c
}

func verify(t *testing.T, s Scenario, c *Capture, piVar string) {
	t.Helper()
	recs, err := c.Records()
	if err != nil {
		t.Fatalf("stdout is not JSONL: %v", err)
	}
	for i, r := range recs {
		if _, ok := r["type"].(string); !ok {
			t.Errorf("record %d has no type: %v", i, r)
		}
	}
	if len(c.Meta.ScriptErrors) > 0 {
		t.Errorf("the fake model ran out of script: %v", c.Meta.ScriptErrors)
	}
	want := strings.TrimPrefix(versionDirs[piVar], "pi-")
	if !strings.HasPrefix(c.Meta.PiVersion, strings.TrimSuffix(want, "x")) {
		t.Errorf("captured with Pi %q, want %s", c.Meta.PiVersion, want)
	}
	if s.Check != nil {
		if err := s.Check(c, recs); err != nil {
			t.Errorf("%s: %v\ntypes: %v", s.Name, err, Types(recs))
		}
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
