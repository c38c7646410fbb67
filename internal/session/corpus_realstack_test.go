//go:build realstack

package session

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// TestRecordInjectCorpus runs the real Pi (1.6.0 and 0.73) with
// testdata/corpus/inject.ts, an extension that injects custom messages and
// entries around each prompt, and traces the session file Pi wrote: one
// run per prompt. With -update it keeps the file, Pi's stdout beside it,
// and the files derived from it (see derive), as the corpus the unit tests
// read.
func TestRecordInjectCorpus(t *testing.T) {
	for _, v := range []struct{ name, env string }{{"1.6.0", pitest.EnvPi}, {"0.73", pitest.EnvPi073}} {
		t.Run(v.name, func(t *testing.T) {
			model := fakemodel.Start(t, fakemodel.WithScript(
				fakemodel.Tools(fakemodel.Bash("call_echo_1", "echo hi")),
				fakemodel.Text("Echoed.", 2),
				fakemodel.Text("Second answer.", 2),
				fakemodel.Text("Third answer.", 2),
				fakemodel.Text("Fourth answer.", 2),
			))
			env := pitest.New(t, model.URL(), pitest.WithPi(pitest.Lookup(t, v.env)))
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			ext := repo.Path(filepath.Join("internal", "session", "testdata", "corpus", "inject.ts"))
			args := append([]string{"--mode", "json", "-e", ext, "--session-dir", env.SessionDir}, injectPrompts...)
			res, err := env.Run(env.Command(ctx, env.Args(args...)...))
			if err != nil {
				t.Fatalf("pi: %v\n%s", err, res.Stderr)
			}
			files, _ := filepath.Glob(filepath.Join(env.SessionDir, "*.jsonl"))
			if len(files) != 1 {
				t.Fatalf("%d session files", len(files))
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if spantree.Updating() {
				name := "inject-" + v.name
				write(t, name+".jsonl", b)
				write(t, name+".stream.jsonl", res.Stdout)
				for suffix, d := range derive(t, b) {
					write(t, name+"."+suffix+".jsonl", d)
				}
			}
			checkInject(t, b)
		})
	}
}

func write(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(corpusDir(), name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
