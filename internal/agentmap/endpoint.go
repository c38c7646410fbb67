package agentmap

import (
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// No json stream or session file record names the server a model call
// goes to; an RPC response that describes a model (get_state, set_model,
// cycle_model) does, by its baseUrl. The RPC tracker hands it over with
// LearnEndpoint, as it does the session id.

// maxEndpoints bounds the models whose endpoints are kept: a controller
// switching among more than this many is not a case to spend memory on.
const maxEndpoints = 64

type modelKey struct{ provider, model string }

// endpoint is where a model's calls go: host and port only, never the
// URL's path or credentials.
type endpoint struct {
	host string
	port int // 0: unknown
}

// LearnEndpoint notes that Pi sends the calls of provider's model (Pi's
// ids, as its messages name them) to baseURL: the chat spans of that model
// that start afterwards carry server.address and server.port. A baseURL
// with no host forgets what was known.
func (m *Mapper) LearnEndpoint(provider, model, baseURL string) {
	k := modelKey{provider, model}
	e, ok := parseEndpoint(baseURL)
	if !ok {
		delete(m.endpoints, k)
		return
	}
	if m.endpoints == nil {
		m.endpoints = map[modelKey]endpoint{}
	}
	if _, have := m.endpoints[k]; !have && len(m.endpoints) >= maxEndpoints {
		clear(m.endpoints) // older models are the likelier to be gone
	}
	m.endpoints[k] = e
}

func parseEndpoint(raw string) (endpoint, bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return endpoint{}, false
	}
	e := endpoint{host: u.Hostname()}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 1<<16 {
			e.port = n
		}
	} else {
		switch u.Scheme {
		case "https":
			e.port = 443
		case "http":
			e.port = 80
		}
	}
	return e, true
}

// endpointAttrs appends the server attributes of provider's model, if an
// RPC response named its endpoint.
func (m *Mapper) endpointAttrs(provider, model string, attrs []attribute.KeyValue) []attribute.KeyValue {
	if len(m.endpoints) == 0 {
		return attrs
	}
	e, ok := m.endpoints[modelKey{provider, model}]
	if !ok {
		return attrs
	}
	attrs = append(attrs, semconv.ServerAddress(e.host))
	if e.port > 0 {
		attrs = append(attrs, semconv.ServerPort(e.port))
	}
	return attrs
}
