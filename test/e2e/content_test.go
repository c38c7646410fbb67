//go:build realstack

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/jaegertest"
)

// TestContentInJaeger runs the real Pi under `pi-otel run --capture-content`
// and reads back from Jaeger what a GenAI backend reads: each call's input
// (the second the tool result it answers), its system instructions and
// answer, and the run's prompt and answer on the root.
func TestContentInJaeger(t *testing.T) {
	t.Parallel()
	j := jaegertest.Start(t)
	s := prepare(t, "bash-tool")
	since := time.Now().Add(-time.Second)
	r := runPiOtel(t, s.pi, call{
		args: append([]string{"run", "--capture-content", "--"}, s.piArgs()...),
		env:  otlpGRPC(j, "e2e-content"),
	})
	if r.code != 0 {
		t.Fatalf("pi-otel exited %d\nstderr:\n%s", r.code, r.stderr)
	}
	s.check(t, r)
	tr := one(t, stored(t, j, "e2e-content", since, r))
	chats := tr.Named("chat fake-model")
	if len(chats) != 2 {
		t.Fatalf("%d chats:\n%s", len(chats), tr.Tree())
	}
	want := []struct{ in, notIn, out string }{
		{in: "Run echo", notIn: "hello from bash", out: `"name":"bash"`},
		{in: "hello from bash", out: "The command printed hello."},
	}
	for i, c := range chats {
		in, out := c.Str("gen_ai.input.messages"), c.Str("gen_ai.output.messages")
		if !strings.Contains(in, want[i].in) || want[i].notIn != "" && strings.Contains(in, want[i].notIn) {
			t.Errorf("chat %d was sent %.300q", i, in)
		}
		if !strings.Contains(out, want[i].out) {
			t.Errorf("chat %d answered %.300q", i, out)
		}
		if !strings.Contains(c.Str("gen_ai.system_instructions"), "coding assistant") {
			t.Errorf("chat %d without the system instructions", i)
		}
	}
	rt := root(t, tr)
	if in := rt.Str("gen_ai.input.messages"); !strings.Contains(in, "Run echo") {
		t.Errorf("root input %.300q", in)
	}
	if out := rt.Str("gen_ai.output.messages"); !strings.Contains(out, "The command printed hello.") {
		t.Errorf("root output %.300q", out)
	}
	if defs := rt.Str("gen_ai.tool.definitions"); !strings.Contains(defs, `"name":"bash"`) {
		t.Errorf("root tool definitions %.300q", defs)
	}
}
