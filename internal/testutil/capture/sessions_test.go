//go:build realstack

package capture

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

var sessionsDir = flag.String("sessions", repo.Path("testdata/sessions"), "directory of the session captures")

// sessionVersions: the older releases keep a few scenarios, enough to
// compare their file format with 1.6.0's.
var sessionVersions = map[string][]string{
	"text":      {pitest.EnvPi, pitest.EnvPi103, pitest.EnvPi073},
	"bash-tool": {pitest.EnvPi, pitest.EnvPi103, pitest.EnvPi073},
	"retry-529": {pitest.EnvPi, pitest.EnvPi103, pitest.EnvPi073},
}

// TestSessionCapture records (with -update) or checks the session captures:
// each scenario run with --session-dir, keeping stdout and the session file.
func TestSessionCapture(t *testing.T) {
	for _, s := range SessionScenarios() {
		vs := sessionVersions[s.Name]
		if vs == nil {
			vs = []string{pitest.EnvPi}
		}
		for _, v := range vs {
			dir := filepath.Join(*sessionsDir, versionDirs[v])
			t.Run(versionDirs[v]+"/"+s.Name, func(t *testing.T) {
				c := recordOrLoad(t, "TestSessionCapture",
					func() *SessionCapture { return recordSession(t, s, v, dir) },
					func() (*SessionCapture, error) { return LoadSession(dir, s.Name) })
				verify(t, s, &c.Capture, v)
				recs, err := decodeLines(c.Session)
				if err != nil {
					t.Fatalf("session file is not JSONL: %v", err)
				}
				if len(recs) < 2 || recs[0]["type"] != "session" {
					t.Fatalf("session file: %d lines, first %v; want a header and entries", len(recs), firstType(recs))
				}
			})
		}
	}
}

func recordSession(t *testing.T, s Scenario, piVar, dir string) *SessionCapture {
	var sess []byte
	c := recordRun(t, s, piVar, func(env *pitest.Env) []string {
		args := withSessionDir(s.Args, env.SessionDir)
		if s.Prepare != nil {
			extra, err := s.Prepare(env)
			if err != nil {
				t.Fatal(err)
			}
			args = append(extra, args...)
		}
		return env.Args(args...)
	}, func(env *pitest.Env) {
		var err error
		if sess, err = sessionFile(env.SessionDir); err != nil {
			t.Fatal(err)
		}
	})
	sc := &SessionCapture{Capture: *c, Session: sess}
	if err := writeSession(dir, sc); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: exit %d, %d model requests, session %d bytes", s.Name, sc.Meta.ExitCode, sc.Meta.ModelRequests, len(sess))
	return sc
}
