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
				c := recordOrLoad(t, "TestCapture",
					func() *Capture { return record(t, s, v, dir) },
					func() (*Capture, error) { return Load(dir, s.Name) })
				verify(t, s, c, v)
			})
		}
	}
}

// recordOrLoad records a capture with -update, or else loads the one on
// disk; a missing one fails and says how test (a test of this package)
// records it.
func recordOrLoad[C any](t *testing.T, test string, record func() C, load func() (C, error)) C {
	t.Helper()
	if *update {
		return record()
	}
	c, err := load()
	if err != nil {
		t.Fatalf("capture missing (re-record with `go test -tags realstack ./internal/testutil/capture -run %s -args -update`): %v", test, err)
	}
	return c
}

func record(t *testing.T, s Scenario, piVar, dir string) *Capture {
	c := recordRun(t, s, piVar, func(env *pitest.Env) []string {
		args := env.Args(s.Args...)
		if s.Prepare != nil {
			extra, err := s.Prepare(env)
			if err != nil {
				t.Fatal(err)
			}
			args = env.Args(append(extra, s.Args...)...)
		}
		return args
	}, nil)
	if err := (Recorder{Dir: dir}).write(c); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: exit %d, %d model requests, %d bytes", s.Name, c.Meta.ExitCode, c.Meta.ModelRequests, len(c.Stdout))
	return c
}

// recordRun runs scenario s with the Pi in $piVar against its scripted fake
// model and returns what it wrote; argsFor gives Pi's arguments in the
// prepared environment, and after (if set) runs once Pi has exited.
func recordRun(t *testing.T, s Scenario, piVar string, argsFor func(*pitest.Env) []string, after func(*pitest.Env)) *Capture {
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
	args := argsFor(env)
	res, err := run(runSpec{env: env, args: args, onLine: s.OnLine, rpc: s.RPC})
	if err != nil {
		t.Fatalf("%v\nstdout so far:\n%s", err, tail(res.stdout))
	}
	if after != nil {
		after(env)
	}
	return &Capture{
		Meta: Meta{
			Scenario: s.Name, Description: s.Description, PiVersion: ver, Mode: s.Mode(),
			Args: append([]string{"pi"}, args...), ExitCode: res.exitCode, Signal: res.signal,
			Stderr: res.stderr, ModelRequests: len(model.ChatRequests()), Requests: describe(model.ChatRequests()), ScriptErrors: model.ScriptErrors(),
		},
		Stdout: res.stdout,
		Stdin:  res.stdin,
	}
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
