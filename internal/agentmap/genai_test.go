package agentmap_test

import (
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// A run whose retries were exhausted fails with the last call's error
// class as error.type on its root, as on the call itself.
func TestFailedRunHasErrorType(t *testing.T) {
	forest, _, _ := replay(t, replaytest.Capture(t, v160, "retry-exhausted"), nil)
	root := spantree.One(t, forest)
	if root.Must(t, "pi.outcome") != "error" || !root.Failed() {
		t.Fatalf("the run did not fail:\n%s", root)
	}
	chats := root.Find("chat fake-model")
	if got, want := root.Must(t, "error.type"), chats[len(chats)-1].Must(t, "error.type"); got != want || got == "" {
		t.Errorf("root error.type %q, last call's %q", got, want)
	}
	ok := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, "text"), nil)))
	if _, set := ok.Attr("error.type"); set {
		t.Error("a run that went well has an error.type")
	}
}

// Every chat says it streamed; the root names a model only when one model
// served the whole run.
func TestStreamAndRootModel(t *testing.T) {
	root := spantree.One(t, first(replay(t, replaytest.Capture(t, v160, "bash-tool"), nil)))
	for _, c := range root.Find("chat fake-model") {
		if c.Must(t, "gen_ai.request.stream") != "true" {
			t.Errorf("%s without gen_ai.request.stream", c.Name)
		}
	}
	if root.Must(t, "gen_ai.request.model") != "fake-model" {
		t.Error("a one-model run's root does not name its model")
	}
	for _, tool := range root.Find("execute_tool bash") {
		if tool.Must(t, "gen_ai.agent.name") != "pi" {
			t.Errorf("%s does not name its agent", tool.Name)
		}
	}

	// The same run with its second call on another model.
	stream := strings.Replace(string(replaytest.Capture(t, v160, "bash-tool")), `"model":"fake-model","usage":{"input":1419`, `"model":"other-model","usage":{"input":1419`, -1)
	if !strings.Contains(stream, "other-model") {
		t.Fatal("the capture changed shape: no second call to rename")
	}
	two := spantree.One(t, first(replay(t, []byte(stream), nil)))
	if m, set := two.Attr("gen_ai.request.model"); set {
		t.Errorf("a two-model run's root names one model: %q", m)
	}
}
