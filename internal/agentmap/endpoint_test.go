package agentmap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/testutil/replaytest"
	"github.com/pi-otel/pi-otel/internal/testutil/repo"
	"github.com/pi-otel/pi-otel/internal/testutil/spantree"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// TestLearnEndpoint: a base URL becomes the chat's server.address and
// server.port (the scheme's port when the URL has none), and nothing of
// its path or credentials; a URL with no host, or another model's, names
// nothing.
func TestLearnEndpoint(t *testing.T) {
	for _, c := range []struct {
		provider, model, url string
		host, port           string // "" host: no server.address
	}{
		{"fake", "fake-model", "https://user:secret@api.example.com/v1?key=k", "api.example.com", "443"},
		{"fake", "fake-model", "http://127.0.0.1:8080/v1", "127.0.0.1", "8080"},
		{"fake", "fake-model", "http://[::1]/v1", "::1", "80"},
		{"fake", "fake-model", "unix:///tmp/sock", "", ""},
		{"fake", "fake-model", "", "", ""},
		{"other", "fake-model", "https://api.example.com", "", ""},
		{"fake", "other-model", "https://api.example.com", "", ""},
	} {
		t.Run(c.url, func(t *testing.T) {
			rec := spantree.NewRecorder()
			m := agentmap.New(rec)
			m.LearnEndpoint(c.provider, c.model, c.url)
			replaytest.Map(m, replaytest.Capture(t, v160, "text"), agentmap.Ending{Reason: vocab.EndEOF})
			chat := spantree.One(t, rec.Forest(t)).Find("chat fake-model")[0]
			host, hasHost := chat.Attr("server.address")
			port, hasPort := chat.Attr("server.port")
			if c.host == "" {
				if hasHost || hasPort {
					t.Errorf("server.address %q server.port %q, want none", host, port)
				}
				return
			}
			if host != c.host || port != c.port {
				t.Errorf("server.address %q server.port %q, want %q %q", host, port, c.host, c.port)
			}
			for _, n := range spantree.All(rec.Forest(t)) {
				for k, v := range n.Attrs {
					if strings.Contains(v, "secret") || strings.Contains(v, "key=k") {
						t.Errorf("%s %s leaks the URL: %s", n.Name, k, v)
					}
				}
			}
		})
	}
}

// TestStreamsNameNoEndpoint: no json stream of any captured Pi names the
// server its calls go to, so none of their spans has server.address.
func TestStreamsNameNoEndpoint(t *testing.T) {
	files, _ := filepath.Glob(repo.Path("testdata/captures/pi-*/*.jsonl"))
	n := 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "rpc-") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n++
		if strings.Contains(string(b), `"baseUrl"`) {
			t.Errorf("%s names an endpoint: server.address could be set from it", f)
		}
		forest, _, _ := replay(t, b, nil)
		for _, s := range spantree.All(forest) {
			if _, ok := s.Attr("server.address"); ok {
				t.Errorf("%s: %s has server.address", filepath.Base(f), s.Name)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d captures read", n)
	}
}
