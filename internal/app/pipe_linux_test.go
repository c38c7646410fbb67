package app_test

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// shrinkPipe makes w's pipe as small as Linux allows, one page.
func shrinkPipe(t *testing.T, w *os.File) {
	t.Helper()
	if _, err := unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 4096); err != nil {
		t.Fatal(err)
	}
}
