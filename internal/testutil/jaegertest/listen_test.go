//go:build realstack

package jaegertest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestLoopbackOnly checks that no socket Jaeger listens on is bound to a
// non-loopback address: the config must bind every endpoint to 127.0.0.1.
func TestLoopbackOnly(t *testing.T) {
	j := Start(t)
	inodes := socketInodes(t, j.proc.Pid())
	if len(inodes) == 0 {
		t.Fatal("found no sockets of the jaeger process")
	}
	listening := 0
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			if !inodes[fields[9]] {
				continue
			}
			listening++
			addr, _, _ := strings.Cut(fields[1], ":")
			if addr != "0100007F" && addr != "00000000000000000000000001000000" {
				t.Errorf("jaeger listens on %s (%s), not loopback", fields[1], file)
			}
		}
		f.Close()
	}
	if listening < 6 {
		t.Errorf("jaeger listens on %d sockets, want the 6 configured", listening)
	}
}

func socketInodes(t *testing.T, pid int) map[string]bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		link, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue
		}
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			out[strings.TrimSuffix(ino, "]")] = true
		}
	}
	return out
}
