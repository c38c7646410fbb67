package freeport

import (
	"net"
	"strconv"
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
		if n, _ := strconv.Atoi(port); n < low || n >= high {
			t.Errorf("port %s: outside [%d, %d), where the kernel hands out ephemeral ports", port, low, high)
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

// Ports handed out are not handed out again while tests run side by side.
func TestAddrsNeverTwice(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		a := Addr(t)
		if seen[a] {
			t.Fatalf("%s handed out twice", a)
		}
		seen[a] = true
	}
}
