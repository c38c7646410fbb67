// Package freeport picks loopback ports for the processes and servers a
// test starts.
//
// A port is free when it is picked, not when it is used: another process
// may take it in between. Callers that start a binary on one retry with
// fresh ports when it reports "address already in use".
package freeport

import (
	"net"
	"strings"
	"testing"
)

// Addr returns a 127.0.0.1:PORT address whose port was free a moment ago.
func Addr(tb testing.TB) string {
	tb.Helper()
	return Addrs(tb, 1)[0]
}

// Addrs returns n such addresses with distinct ports: every port stays
// reserved until all n are picked, so none is handed out twice.
func Addrs(tb testing.TB, n int) []string {
	tb.Helper()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	out := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("freeport: %v", err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out
}

// Port returns the port part of a host:port address.
func Port(addr string) string {
	_, p, _ := strings.Cut(addr, ":")
	return p
}
