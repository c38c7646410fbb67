package app_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// canObserve: on Linux a test can see what another process waits in
// (/proc) and which folders it opens (inotify).
const canObserve = true

// inFIFOOpen reports whether a thread of process pid waits in the open of
// a FIFO for the other end to be opened.
func inFIFOOpen(pid int) bool {
	chans, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "wchan"))
	for _, c := range chans {
		if b, err := os.ReadFile(c); err == nil && strings.TrimSpace(string(b)) == "wait_for_partner" {
			return true
		}
	}
	return false
}

// dirOpens counts the opens of the folder dir from now on, by anyone: a
// walk of a tree opens each folder in it to list it.
func dirOpens(t *testing.T, dir string) func() int {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN|unix.IN_ONLYDIR); err != nil {
		t.Fatal(err)
	}
	n := 0
	buf := make([]byte, 4096)
	return func() int {
		for {
			k, err := unix.Read(fd, buf)
			if err != nil || k <= 0 {
				return n // EAGAIN: nothing more for now
			}
			// Events: wd, mask, cookie, len (4 bytes each), then len bytes
			// of name; no name means dir itself, not an entry in it.
			for off := 0; off+unix.SizeofInotifyEvent <= k; {
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				name := int(binary.NativeEndian.Uint32(buf[off+12:]))
				if mask&unix.IN_OPEN != 0 && name == 0 {
					n++
				}
				off += unix.SizeofInotifyEvent + name
			}
		}
	}
}
