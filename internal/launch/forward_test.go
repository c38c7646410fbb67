//go:build unix

package launch_test

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"github.com/pi-otel/pi-otel/internal/launch"
)

// superviseTrap starts the supervise helper (pi-otel's role) over a trap
// child (Pi's role) and waits until both are ready for signals.
func superviseTrap(t *testing.T, trapExit string, env ...string) *helper {
	t.Helper()
	env = append(env, "SUP_CHILD_HELPER=trap", "TRAP_EXIT="+trapExit)
	h := startHelper(t, "supervise", []string{os.Args[0]}, helperOpts{env: env})
	h.expect("out: ready")
	h.expectPrefix("err: started ")
	return h
}

func checkExit(t *testing.T, h *helper, code int) {
	t.Helper()
	ws := h.finish()
	if !ws.Exited() || ws.ExitStatus() != code {
		t.Fatalf("helper ended with %v, want exit %d; output %q", ws, code, h.seen)
	}
}

// Pi handles the signal and exits 128+N itself.
func TestForwardedSignalHandledByChild(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sigNames[sig], func(t *testing.T) {
			h := superviseTrap(t, "INT TERM")
			h.signal(sig)
			h.expect("out: got " + sigNames[sig])
			h.expect("err: signal " + sigNames[sig] + " forwarded")
			code := 128 + int(sig)
			h.expect("err: status code=" + strconv.Itoa(code) + " signal=0")
			checkExit(t, h, code)
		})
	}
}

// The signal's default action kills the child; the wrapper reports 128+N.
func TestForwardedSignalKillsChild(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sigNames[sig], func(t *testing.T) {
			h := startHelper(t, "supervise", []string{"sleep", "1000"}, helperOpts{})
			h.expectPrefix("err: started ")
			h.signal(sig)
			code := 128 + int(sig)
			h.expect("err: status code=" + strconv.Itoa(code) + " signal=" + strconv.Itoa(int(sig)))
			checkExit(t, h, code)
		})
	}
}

func TestHarmlessSignalsAreForwarded(t *testing.T) {
	h := superviseTrap(t, "INT")
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGHUP, syscall.SIGQUIT} {
		h.signal(sig)
		h.expect("out: got " + sigNames[sig])
		h.expect("err: signal " + sigNames[sig] + " forwarded")
	}
	h.send(syscall.SIGINT, "out: got INT")
	checkExit(t, h, 130)
}

// A child that survives the first SIGINT/SIGTERM is killed by the second.
func TestSecondSignalEscalates(t *testing.T) {
	for _, pair := range [][2]syscall.Signal{
		{syscall.SIGINT, syscall.SIGINT},
		{syscall.SIGINT, syscall.SIGTERM},
		{syscall.SIGTERM, syscall.SIGTERM},
	} {
		t.Run(sigNames[pair[0]]+"+"+sigNames[pair[1]], func(t *testing.T) {
			// The child ignores everything; no window, so the second
			// signal escalates however soon it comes.
			h := superviseTrap(t, "", "SUP_WINDOW=0s")
			h.signal(pair[0])
			h.expect("out: got " + sigNames[pair[0]])
			h.expect("err: signal " + sigNames[pair[0]] + " forwarded")
			h.signal(pair[1])
			h.expect("err: signal " + sigNames[pair[1]] + " escalated")
			h.expect("err: status code=137 signal=9")
			checkExit(t, h, 137)
			if n := h.count("out: got " + sigNames[pair[1]]); pair[0] != pair[1] && n != 0 {
				t.Errorf("the escalating signal reached the child too")
			}
		})
	}
}

// A second SIGTERM within the window is a copy of the first: not forwarded,
// no escalation.
func TestDuplicateWithinWindowIsDropped(t *testing.T) {
	h := superviseTrap(t, "USR2", "SUP_WINDOW=1h")
	h.send(syscall.SIGTERM, "out: got TERM", "err: signal TERM forwarded")
	h.send(syscall.SIGTERM, "err: signal TERM duplicate")
	h.send(syscall.SIGINT, "err: signal INT duplicate")
	// Round trips through the child, so a wrongly forwarded copy would
	// have been reported before the exit.
	h.send(syscall.SIGUSR1, "out: got USR1")
	h.send(syscall.SIGUSR2, "out: got USR2")
	checkExit(t, h, 128+int(syscall.SIGUSR2))
	if n := h.count("out: got TERM"); n != 1 {
		t.Errorf("child got SIGTERM %d times, want 1", n)
	}
	if n := h.count("out: got INT"); n != 0 {
		t.Errorf("child got SIGINT %d times, want 0", n)
	}
}

// Once the child is gone, signals act on the wrapper again.
func TestForwardingStopsWhenChildExits(t *testing.T) {
	h := superviseTrap(t, "TERM", "SUP_LINGER=1")
	h.send(syscall.SIGTERM, "err: status code=143 signal=0", "err: lingering")
	h.signal(syscall.SIGINT)
	ws := h.finish()
	if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Fatalf("lingering helper ended with %v, want death by SIGINT; output %q", ws, h.seen)
	}
}

// Under nohup the wrapper starts with SIGHUP ignored. It still forwards
// SIGHUP, and the child, which inherited the ignore, decides: sleep keeps
// ignoring it, as it would under nohup without the wrapper.
func TestIgnoredSignalIsLeftToTheChild(t *testing.T) {
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("no nohup")
	}
	h := startHelper(t, "supervise", []string{"sleep", "1000"}, helperOpts{wrap: []string{nohup}})
	h.expectPrefix("err: started ")
	h.send(syscall.SIGHUP, "err: signal HUP forwarded")
	h.send(syscall.SIGTERM, "err: status code=143 signal=15")
	checkExit(t, h, 143)
}

// stop may be called twice, and ForwardSignals after the exit is a no-op.
func TestStopIsIdempotent(t *testing.T) {
	p := start(t, []string{"sleep", "1000"})
	var events []launch.SignalEvent
	stop := p.ForwardSignals(launch.WithSignalObserver(func(ev launch.SignalEvent) {
		events = append(events, ev)
	}))
	stop()
	stop()
	if len(events) != 0 {
		t.Fatalf("events before any signal: %v", events)
	}
	p.Signal(syscall.SIGKILL)
	if st := wait(t, p); st.Signal != syscall.SIGKILL {
		t.Fatalf("status %v", st)
	}
	// After the child is gone, ForwardSignals does nothing.
	p.ForwardSignals()()
}

func TestSignalActionString(t *testing.T) {
	for a, want := range map[launch.SignalAction]string{
		launch.SignalForwarded: "forwarded",
		launch.SignalDuplicate: "duplicate",
		launch.SignalEscalated: "escalated",
		launch.SignalAction(0): "SignalAction(0)",
	} {
		if got := a.String(); got != want {
			t.Errorf("%d: %q, want %q", int(a), got, want)
		}
	}
}
