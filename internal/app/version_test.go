package app

import (
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/buildinfo"
)

// TestVersionCommand: version and --version print the build's facts (what
// internal/buildinfo reads), help version says what it does, and an
// argument it does not take is an error.
func TestVersionCommand(t *testing.T) {
	want := buildinfo.Read().String()
	for _, arg := range []string{"version", "--version"} {
		code, out, errs := mainWith(nil, arg)
		if code != 0 || out != want || errs != "" {
			t.Errorf("pi-otel %s: exit %d, stdout %q, stderr %q; want %q", arg, code, out, errs, want)
		}
	}
	if !strings.Contains(want, "tested with Pi "+strings.Join(buildinfo.TestedPi, ", ")) || !strings.Contains(want, "\ncommit: ") {
		t.Errorf("--version lacks the commit or the tested Pis:\n%s", want)
	}
	for _, args := range [][]string{{"help", "version"}, {"version", "--help"}} {
		if code, out, _ := mainWith(nil, args...); code != 0 || !strings.HasPrefix(out, "Usage: pi-otel version") {
			t.Errorf("pi-otel %s: exit %d, %q", strings.Join(args, " "), code, out)
		}
	}
	if code, _, errs := mainWith(nil, "version", "--json"); code != 2 || !strings.Contains(errs, "takes no arguments") {
		t.Errorf("pi-otel version --json: exit %d, stderr %q; want 2 and a line saying why", code, errs)
	}
}
