package launch_test

import (
	"os"
	"strconv"
	"syscall"
	"testing"

	await "github.com/pi-otel/pi-otel/internal/testutil/wait"
)

const prSetChildSubreaper = 36

// becomeSubreaper makes the test process adopt its orphaned descendants, so
// it can reap the child of a killed helper and read how that child died.
func becomeSubreaper(t *testing.T) {
	t.Helper()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Skipf("PR_SET_CHILD_SUBREAPER: %v", errno)
	}
	t.Cleanup(func() { syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0) })
}

// reapOrphan waits for pid, adopted by the test process, to end. ok is
// false if it still runs at the deadline (it is then killed and reaped).
func reapOrphan(t *testing.T, pid int) (ws syscall.WaitStatus, ok bool) {
	t.Helper()
	if await.Until(deadline, func() bool {
		got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if err != nil {
			t.Fatalf("wait4(%d): %v (not adopted?)", pid, err)
		}
		return got == pid
	}) {
		return ws, true
	}
	syscall.Kill(pid, syscall.SIGKILL)
	syscall.Wait4(pid, &ws, 0, nil)
	return ws, false
}

// SIGKILL the wrapper: the kernel must signal the child.
func TestParentDeathSignalsChild(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		want syscall.Signal
	}{
		{"default SIGTERM", nil, syscall.SIGTERM},
		{"SIGKILL", []string{"SUP_PDEATHSIG=9"}, syscall.SIGKILL},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			becomeSubreaper(t)
			h := startHelper(t, "supervise", []string{"sleep", "1000"}, helperOpts{env: c.env})
			pid, err := strconv.Atoi(h.expectPrefix("err: started "))
			if err != nil {
				t.Fatal(err)
			}
			h.signal(syscall.SIGKILL)
			if ws := h.exit(); ws.Signal() != syscall.SIGKILL {
				t.Fatalf("helper: %v", ws)
			}
			ws, ok := reapOrphan(t, pid)
			if !ok {
				t.Fatalf("child %d outlived its killed parent", pid)
			}
			if !ws.Signaled() || ws.Signal() != c.want {
				t.Fatalf("orphaned child ended with %v, want death by %v", ws, c.want)
			}
		})
	}
}

// With the parent-death signal disabled the orphan lives on: the control
// for the test above.
func TestParentDeathSignalDisabled(t *testing.T) {
	becomeSubreaper(t)
	h := startHelper(t, "supervise", []string{"sleep", "1000"}, helperOpts{env: []string{"SUP_PDEATHSIG=0"}})
	pid, err := strconv.Atoi(h.expectPrefix("err: started "))
	if err != nil {
		t.Fatal(err)
	}
	h.signal(syscall.SIGKILL)
	h.exit()
	// Any parent-death signal was sent before the helper became
	// reapable; the one that ends the child must be ours.
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatalf("orphan gone already: %v", err)
	}
	ws, ok := reapOrphan(t, pid)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGUSR1 {
		t.Fatalf("orphan ended with %v, want death by our SIGUSR1", ws)
	}
}

// Linux sends the parent-death signal when the forking thread exits. A
// caller that starts the child from a locked goroutine which then returns
// kills that thread; the child must not die with it.
func TestChildOutlivesCallerThread(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("needs /proc to see the thread exit")
	}
	h := superviseTrap(t, "TERM", "SUP_LOCKED_CALLER=1", "SUP_PDEATHSIG=9")
	h.expect("err: caller thread gone")
	h.send(syscall.SIGUSR1, "out: got USR1")
	h.send(syscall.SIGTERM, "out: got TERM")
	checkExit(t, h, 143)
}
