package collectortest

import (
	"net"
	"sync"
	"testing"
)

// BlackHole listens on a loopback port, accepts every connection and never
// reads or writes on it: a collector that hangs, or one behind a wedged
// proxy. It returns the host:port, closed when the test ends.
func BlackHole(tb testing.TB) string {
	tb.Helper()
	addr, _ := BlackHoleConns(tb)
	return addr
}

// BlackHoleConns is BlackHole that also tells how many connections it has
// taken: an exporter connects with its first export, so a test can wait
// for an export to be under way.
func BlackHoleConns(tb testing.TB) (addr string, conns func() int) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var mu sync.Mutex
	var taken []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			taken = append(taken, c)
			mu.Unlock()
		}
	}()
	tb.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range taken {
			_ = c.Close()
		}
	})
	return ln.Addr().String(), func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(taken)
	}
}
