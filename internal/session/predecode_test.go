package session

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/session/sessiongen"
)

// TestPredecodeMatchesLine: decoding ahead on another goroutine gives the
// very spans, attributes, times, events and links, and the same stats, as
// feeding line by line, for real files of every Pi version, the corpus,
// generated histories with and without nested runs, and damage.
func TestPredecodeMatchesLine(t *testing.T) {
	inputs := map[string][]byte{}
	for _, v := range []string{"pi-1.6.0", "pi-1.0.3", "pi-0.73.x"} {
		for _, name := range captured(t, v) {
			inputs[v+"/"+name] = readCapture(t, v, name+".jsonl")
		}
	}
	corpus, _ := filepath.Glob(filepath.Join(corpusDir(), "*.jsonl"))
	for _, p := range corpus {
		if strings.HasSuffix(p, ".stream.jsonl") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs["corpus/"+filepath.Base(p)] = b
	}
	for _, subs := range []bool{false, true} {
		var buf bytes.Buffer
		if _, err := sessiongen.Write(&buf, sessiongen.Config{Size: 2e6, Seed: 7, Subagents: subs}); err != nil {
			t.Fatal(err)
		}
		inputs[fmt.Sprintf("generated subagents=%v", subs)] = buf.Bytes()
	}
	// Damage: blank lines, a cut line, a second header, no header at all.
	gen := inputs["generated subagents=false"]
	ls := bytes.SplitAfter(gen[:min(len(gen), 200<<10)], []byte("\n"))
	damaged := bytes.Join([][]byte{ls[0], []byte("\n\r\n"), ls[1], ls[2][:len(ls[2])/2], []byte("\n"), ls[0]}, nil)
	damaged = append(damaged, bytes.Join(ls[3:len(ls)-1], nil)...)
	inputs["damaged"] = damaged
	inputs["headless"] = bytes.Join(ls[1:len(ls)-1], nil)

	configs := map[string]func() Config{
		"plain":   func() Config { return Config{} },
		"content": func() Config { return Config{Content: plain{}, ChildSessions: nested.ReadSessionFile(1 << 20)} },
	}
	for name, in := range inputs {
		for cname, cfg := range configs {
			line, lst := dumpTrace(in, cfg(), feed)
			pre, pst := dumpTrace(in, cfg(), feedPredecoded)
			if lst != pst {
				t.Errorf("%s (%s): stats %+v line by line, %+v predecoded", name, cname, lst, pst)
			}
			if len(line) == 0 && name != "headless" {
				t.Errorf("%s (%s): no span at all", name, cname)
			}
			if len(line) != len(pre) {
				t.Errorf("%s (%s): %d spans line by line, %d predecoded", name, cname, len(line), len(pre))
				continue
			}
			for i := range line {
				if line[i] != pre[i] {
					t.Errorf("%s (%s): span %d differs:\nline by line: %s\npredecoded:   %s", name, cname, i, line[i], pre[i])
					break
				}
			}
		}
	}
}

// dumpTrace traces in and describes every ended span whole, in end order.
func dumpTrace(in []byte, cfg Config, feed func(*FileMapper, []byte)) ([]string, Stats) {
	rec, tr := record(in, cfg, feed)
	var out []string
	for _, s := range rec.Ended() {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s<%s %s..%s %v %q", s.Name(), s.SpanContext().SpanID(), s.Parent().SpanID(),
			s.StartTime().Format("15:04:05.000000"), s.EndTime().Format("15:04:05.000000"), s.Status().Code, s.Status().Description)
		for _, a := range s.Attributes() {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.AsInterface())
		}
		for _, e := range s.Events() {
			fmt.Fprintf(&b, " event %s@%s", e.Name, e.Time.Format("15:04:05.000000"))
			for _, a := range e.Attributes {
				fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.AsInterface())
			}
		}
		for _, l := range s.Links() {
			fmt.Fprintf(&b, " link %s", l.SpanContext.SpanID())
		}
		out = append(out, b.String())
	}
	return out, tr.Stats()
}
