//go:build realstack

package session

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
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

func join(ls [][]byte) []byte { return append(bytes.Join(ls, []byte("\n")), '\n') }

func enc(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func role(t *testing.T, l []byte) string {
	if m, ok := obj(t, l)["message"].(map[string]any); ok {
		r, _ := m["role"].(string)
		return r
	}
	return ""
}

// derive makes, from a real session file, the shapes real files show:
//
//	resaved   the header re-written an hour after the last entry (an
//	          extension re-saved the file), naming a parent session (the
//	          file was cloned from one): its entries are all older
//	repeated  each tool result line written twice, and the whole last run
//	          appended again, with the same entry ids
//	reissued  each tool result persisted a second time under a new entry id
//	mistyped  fields of other types than the docs give: isError and
//	          durationMs as strings, a message timestamp as an ISO string,
//	          a custom message's display as a number
func derive(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	ls := lines(b)
	out := map[string][]byte{}

	h := obj(t, ls[0])
	last := obj(t, ls[len(ls)-1])
	at, err := time.Parse(time.RFC3339Nano, last["timestamp"].(string))
	if err != nil {
		t.Fatal(err)
	}
	h["timestamp"] = at.Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	h["parentSession"] = "/home/me/.pi/agent/sessions/--home-me-proj--/2026-01-01T00-00-00-000Z_parent-1.jsonl"
	out["resaved"] = join(append([][]byte{enc(t, h)}, ls[1:]...))

	var rep [][]byte
	lastUser := 0
	for i, l := range ls {
		rep = append(rep, l)
		if role(t, l) == "toolResult" {
			rep = append(rep, l)
		}
		if role(t, l) == "user" {
			lastUser = i
		}
	}
	out["repeated"] = join(append(rep, ls[lastUser:]...))

	var re [][]byte
	for _, l := range ls {
		re = append(re, l)
		if role(t, l) == "toolResult" {
			m := obj(t, l)
			m["parentId"], m["id"] = m["id"], "re"+m["id"].(string)[2:]
			re = append(re, enc(t, m))
		}
	}
	// The entry after each copy continues from the copy.
	out["reissued"] = join(rechain(t, re))

	var mt [][]byte
	for _, l := range ls {
		m := obj(t, l)
		msg, _ := m["message"].(map[string]any)
		switch {
		case msg != nil && msg["role"] == "toolResult":
			msg["isError"] = "false"
		case msg != nil && msg["role"] == "assistant" && msg["durationMs"] != nil:
			msg["durationMs"] = string(msg["durationMs"].(json.Number))
		case msg != nil && msg["role"] == "user":
			ts, _ := msg["timestamp"].(json.Number).Int64()
			msg["timestamp"] = time.UnixMilli(ts).UTC().Format(time.RFC3339Nano)
		case m["type"] == "custom_message":
			m["display"] = 1
		default:
			mt = append(mt, l)
			continue
		}
		mt = append(mt, enc(t, m))
	}
	out["mistyped"] = join(mt)
	return out
}

// rechain sets each entry's parentId to the entry before it, where the one
// before it is a re-issued copy.
func rechain(t *testing.T, ls [][]byte) [][]byte {
	out := make([][]byte, len(ls))
	copy(out, ls)
	for i := 2; i < len(ls); i++ {
		prev := obj(t, ls[i-1])
		if id, _ := prev["id"].(string); !strings.HasPrefix(id, "re") {
			continue
		}
		m := obj(t, ls[i])
		if m["parentId"] == prev["parentId"] {
			m["parentId"] = prev["id"]
			out[i] = enc(t, m)
		}
	}
	return out
}
