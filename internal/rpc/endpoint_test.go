package rpc_test

import (
	"net/url"
	"regexp"
	"testing"

	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
)

// TestChatsNameTheEndpointGetStateNamed: get_state's model names the
// server Pi's calls go to (its baseUrl), the one record of Pi's that
// does; the chat spans that start after it carry its host and port, and
// nothing else of the URL.
func TestChatsNameTheEndpointGetStateNamed(t *testing.T) {
	var base string
	for _, l := range transcript(t, "prompt-state") {
		if m := regexp.MustCompile(`"baseUrl":"([^"]+)"`).FindStringSubmatch(string(l.Raw)); m != nil {
			base = m[1]
			break
		}
	}
	u, err := url.Parse(base)
	if base == "" || err != nil || u.Port() == "" {
		t.Fatalf("prompt-state's get_state names no endpoint with a port: %q", base)
	}
	f, _ := play(t, "prompt-state", exit0)
	chats := 0
	for _, n := range spantree.All(f) {
		if n.Attrs["gen_ai.operation.name"] != "chat" {
			if _, ok := n.Attr("server.address"); ok {
				t.Errorf("%s carries server.address", n.Name)
			}
			continue
		}
		chats++
		n.WantAttrs(t, map[string]string{"server.address": u.Hostname(), "server.port": u.Port()})
	}
	if chats != 2 {
		t.Errorf("%d chats, want 2", chats)
	}
}

// TestNoEndpointBeforeAModelResponse: a session whose controller asked
// for no model before the calls leaves server.address out of them.
func TestNoEndpointBeforeAModelResponse(t *testing.T) {
	f, _ := play(t, "compact", exit0)
	chats := 0
	for _, n := range spantree.All(f) {
		if n.Attrs["gen_ai.operation.name"] == "chat" {
			chats++
		}
		if _, ok := n.Attr("server.address"); ok {
			t.Errorf("%s carries server.address with no model response before it", n.Name)
		}
	}
	if chats == 0 {
		t.Fatal("compact has no chat span to look at")
	}
}
