//go:build linux || darwin

package sessionwatch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A Pi in another folder that exits while the Owner looks at it is not
// taken for one in this folder: its folder is read before its command
// line. Here its command line is a pipe, answered only once the folder
// is gone; read in the other order, the folder is unreadable by then.
func TestOwnerOtherPiExitingElsewhere(t *testing.T) {
	dir := t.TempDir()
	file := sessionFile(t, dir, "a.jsonl", `{"type":"session","id":"0001"}`)
	proc := newFakeProc(t)
	proc.add(100, 1, []string{"pi"}, "/work")
	proc.add(300, 1, []string{"pi"}, "/elsewhere")
	cmdline := filepath.Join(proc.root, "300", "cmdline")
	must(t, os.Remove(cmdline))
	must(t, syscall.Mkfifo(cmdline, 0o644))
	done := make(chan struct{})
	go func() {
		defer close(done)
		w, err := os.OpenFile(cmdline, os.O_WRONLY, 0) // until the Owner opens it
		if err != nil {
			return
		}
		defer w.Close()
		_ = os.Remove(filepath.Join(proc.root, "300", "cwd")) // it exits
		_, _ = w.Write([]byte("pi\x00"))
	}()
	t.Cleanup(func() {
		// If the Owner never read it, a reader lets the writer go.
		if r, err := os.OpenFile(cmdline, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			defer r.Close()
		}
		<-done
	})
	o := &Owner{PID: 100, Dir: dir, Cwd: "/work", Proc: proc.root}
	if ok, decided := o.Accept(file); !ok || !decided {
		t.Errorf("Accept = %v, %v; want true, true: a Pi exiting in another folder was taken for one in this", ok, decided)
	}
}
