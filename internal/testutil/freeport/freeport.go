// Package freeport picks loopback ports for the processes and servers a
// test starts.
//
// A port is free when it is picked, not when it is used: another process
// may take it in between. Callers that start a binary on one retry with
// fresh ports when it reports "address already in use".
//
// Ports come from below the kernel's ephemeral range (32768 and up on
// Linux), which every outgoing connection's local port and every bind to
// port 0 draws from: a test that kills a server and restarts it on the
// same port (a gateway brought back) lost that port to them in a busy
// run. Below the range only another picker can take it.
package freeport

import (
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The ports picked from: [low, high).
const (
	low  = 20000
	high = 32768
)

var (
	mu sync.Mutex
	// given are the ports this process handed out: none twice, so that
	// tests side by side never share one, until half the range is given.
	given = map[int]bool{}
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
	mu.Lock()
	defer mu.Unlock()
	if len(given) > (high-low)/2 {
		clear(given)
	}
	out := make([]string, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries == 10000 {
			tb.Fatalf("freeport: no free port in [%d, %d) after %d tries", low, high, tries)
		}
		p := low + rand.IntN(high-low)
		if given[p] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // in use
		}
		given[p] = true
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
