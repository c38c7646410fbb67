package app

import (
	"io"
	"testing"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/internal/testutil/configtest"
)

// A zero sessionConfig is valid and takes the defaults; a bound below
// zero, or an ending for a replayed file, is refused before anything is
// built.
func TestSessionConfigValidate(t *testing.T) {
	exit := func() agentmap.Ending { return agentmap.Ending{} }
	for _, c := range []struct {
		name string
		cfg  sessionConfig
		ok   bool
	}{
		{"zero", sessionConfig{}, true},
		{"one file", sessionConfig{OneFile: true}, true},
		{"followed, with an ending", sessionConfig{Exit: exit}, true},
		{"parent bound below zero", sessionConfig{ParentFileMax: -1}, false},
		{"one file, with an ending", sessionConfig{OneFile: true, Exit: exit}, false},
	} {
		if err := c.cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok %v", c.name, err, c.ok)
		}
	}
	cfg := configtest.Default()
	cfg.Traces.Exporter = telemetry.ExporterNone
	env := Env{Stderr: io.Discard, Getenv: func(string) string { return "" }}
	if _, err := newSessionPipeline(env, cfg, sessionConfig{ParentFileMax: -1}); err == nil {
		t.Error("newSessionPipeline took a parent bound below zero")
	}
	sp, err := newSessionPipeline(env, cfg, sessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.summary(nil)
	if sp.scfg.ParentFileMax != parentFileMax || sp.scfg.ExitOut != env.Stderr {
		t.Errorf("zero fields kept as %d and %v, want the defaults", sp.scfg.ParentFileMax, sp.scfg.ExitOut)
	}
}
