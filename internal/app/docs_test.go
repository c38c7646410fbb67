package app

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/config"

	"github.com/pi-otel/pi-otel/internal/testutil/repo"
)

// TestConfigurationDocListsEveryFlag keeps docs/configuration.md true to
// the code: every flag, with its variable, has a row.
func TestConfigurationDocListsEveryFlag(t *testing.T) {
	doc, err := os.ReadFile(repo.Path("docs/configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	config.RegisterFlags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(string(doc), "`--"+f.Name) {
			t.Errorf("docs/configuration.md does not document --%s", f.Name)
		}
		if i := strings.Index(f.Usage, "(OTEL_"); i >= 0 {
			v := f.Usage[i+1:]
			v = v[:strings.IndexAny(v, ";), ")]
			if !strings.Contains(string(doc), v) {
				t.Errorf("docs/configuration.md does not name %s", v)
			}
		}
	})
	if n < 20 {
		t.Fatalf("only %d flags registered", n)
	}
}
