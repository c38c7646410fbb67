package freeport

import (
	"net"
	"testing"
)

// Addrs hands out distinct loopback ports that a listener can take.
func TestAddrsDistinctAndFree(t *testing.T) {
	addrs := Addrs(t, 8)
	seen := map[string]bool{}
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err != nil || host != "127.0.0.1" || port == "0" {
			t.Fatalf("address %q: host %q port %q (%v), want 127.0.0.1 and a port", a, host, port, err)
		}
		if Port(a) != port {
			t.Errorf("Port(%q) = %q, want %q", a, Port(a), port)
		}
		if seen[port] {
			t.Errorf("port %s handed out twice in %v", port, addrs)
		}
		seen[port] = true
		ln, err := net.Listen("tcp", a)
		if err != nil {
			t.Errorf("listen on %s: %v", a, err)
			continue
		}
		ln.Close()
	}
}
