//go:build unix

package launch_test

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	await "github.com/pi-otel/pi-otel/internal/testutil/wait"
)

// The test binary doubles as the small programs the tests run: with
// helperEnv set it runs one helper instead of the tests.
const helperEnv = "LAUNCH_TEST_HELPER"

// deadline only keeps a broken test from hanging; nothing asserts on time.
const deadline = 60 * time.Second

func init() {
	// The main thread never exits, so keep the main goroutine on it and
	// the locked caller below on a thread that can.
	if os.Getenv(helperEnv) == "supervise" && os.Getenv("SUP_LOCKED_CALLER") != "" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Args[1:]))
	}
	// A test run started as a background job without job control has
	// SIGINT ignored, and children would inherit that. Catching it here
	// makes children start with the default action, as from a terminal.
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGHUP} {
		if signal.Ignored(s) {
			signal.Notify(make(chan os.Signal, 1), s)
		}
	}
	os.Exit(m.Run())
}

func runHelper(mode string, args []string) int {
	switch mode {
	case "emit":
		return helperEmit(args)
	case "trap":
		return helperTrap()
	case "supervise":
		return helperSupervise(args)
	}
	fmt.Fprintln(os.Stderr, "unknown helper", mode)
	return 2
}

// emitted is the deterministic byte stream the "emit" helper writes: every
// byte value, NULs and CRs included, and no trailing newline guaranteed.
func emitted(size int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func helperEmit(args []string) int {
	size, _ := strconv.Atoi(args[0])
	seed, _ := strconv.ParseUint(args[1], 10, 64)
	b := emitted(size, seed)
	// Odd write sizes, so pipe reads see ragged boundaries.
	for n := 1; len(b) > 0; n = n*7%65521 + 1 {
		k := min(n, len(b))
		if _, err := os.Stdout.Write(b[:k]); err != nil {
			return 1
		}
		b = b[k:]
	}
	return 0
}

var sigNames = map[syscall.Signal]string{
	syscall.SIGINT: "INT", syscall.SIGTERM: "TERM", syscall.SIGHUP: "HUP",
	syscall.SIGQUIT: "QUIT", syscall.SIGUSR1: "USR1", syscall.SIGUSR2: "USR2",
	syscall.SIGWINCH: "WINCH", syscall.SIGKILL: "KILL",
}

// helperTrap stands in for Pi: it reports every signal it gets on stdout and
// exits with 128+N for the signals named in TRAP_EXIT.
func helperTrap() int {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	exitOn := strings.Fields(os.Getenv("TRAP_EXIT"))
	fmt.Println("ready")
	for s := range ch {
		name := sigNames[s.(syscall.Signal)]
		fmt.Println("got", name)
		for _, e := range exitOn {
			if e == name {
				return 128 + int(s.(syscall.Signal))
			}
		}
	}
	return 0
}

// helperSupervise does what pi-otel run does: start the child, forward its
// stdout and signals, and exit with its status. Events go to stderr.
func helperSupervise(argv []string) int {
	var opts []launch.Option
	if v := os.Getenv("SUP_PDEATHSIG"); v != "" {
		n, _ := strconv.Atoi(v)
		opts = append(opts, launch.WithParentDeathSignal(syscall.Signal(n)))
	}
	if v := os.Getenv("SUP_CHILD_HELPER"); v != "" {
		opts = append(opts, launch.WithEnv(helperEnv+"="+v))
	}
	var fwd []launch.ForwardOption
	if v := os.Getenv("SUP_WINDOW"); v != "" {
		d, _ := time.ParseDuration(v)
		fwd = append(fwd, launch.WithDuplicateWindow(d))
	}
	fwd = append(fwd, launch.WithSignalObserver(func(ev launch.SignalEvent) {
		fmt.Fprintf(os.Stderr, "signal %s %s\n", sigNames[ev.Signal], ev.Action)
	}))

	var p *launch.Process
	var err error
	if os.Getenv("SUP_LOCKED_CALLER") != "" {
		// Start from a thread that dies right after, as a caller's
		// locked goroutine might. The child must outlive that thread.
		tid := make(chan int)
		go func() {
			runtime.LockOSThread()
			p, err = launch.Start(argv, opts...)
			tid <- gettid()
		}()
		t := <-tid
		if t == os.Getpid() {
			fmt.Fprintln(os.Stderr, "caller ran on the main thread")
			return 2
		}
		if err == nil && !waitThreadGone(t) {
			fmt.Fprintln(os.Stderr, "caller thread still alive")
			return 2
		}
		fmt.Fprintln(os.Stderr, "caller thread gone")
	} else {
		p, err = launch.Start(argv, opts...)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "start error:", err)
		return launch.ExitCodeForStartError(err)
	}
	stop := p.ForwardSignals(fwd...)
	fmt.Fprintln(os.Stderr, "started", p.Pid())

	copied := make(chan struct{})
	go func() {
		io.Copy(os.Stdout, p.Stdout())
		close(copied)
	}()
	st, err := p.Wait()
	<-copied
	if err != nil {
		fmt.Fprintln(os.Stderr, "wait error:", err)
	}
	fmt.Fprintf(os.Stderr, "status code=%d signal=%d\n", st.Code, int(st.Signal))
	if os.Getenv("SUP_LINGER") != "" {
		// Forwarding must have stopped by now: a signal acts on us.
		fmt.Fprintln(os.Stderr, "lingering")
		select {}
	}
	stop()
	return st.Code
}

// waitThreadGone waits until thread tid of this process has exited, which
// is when Linux would send a parent-death signal tied to it.
func waitThreadGone(tid int) bool {
	path := fmt.Sprintf("/proc/self/task/%d", tid)
	if _, err := os.Stat("/proc/self/task"); err != nil {
		return true // no procfs: nothing to wait for
	}
	return await.Until(deadline, func() bool {
		_, err := os.Stat(path)
		return os.IsNotExist(err)
	})
}

// helper is a running helper process whose stdout and stderr lines are
// gathered, tagged "out: " and "err: ". The two streams interleave in no
// fixed order, so expectations match any line not matched before.
type helper struct {
	t       *testing.T
	cmd     *exec.Cmd
	lines   chan string
	seen    []string
	claimed []bool
	exited  bool
}

type helperOpts struct {
	env   []string
	stdin *os.File
	// wrap is put before the helper's own command line (e.g. nohup).
	wrap []string
}

func startHelper(t *testing.T, mode string, args []string, o helperOpts) *helper {
	t.Helper()
	argv := append(append(append([]string(nil), o.wrap...), os.Args[0]), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Env = append(cmd.Env, o.env...)
	if o.stdin != nil {
		cmd.Stdin = o.stdin
	}
	p := proc.StartPiped(t, cmd, proc.Stdout|proc.Stderr)
	h := &helper{t: t, cmd: cmd, lines: make(chan string, 256)}
	var wg sync.WaitGroup
	for tag, r := range map[string]io.Reader{"out: ": p.Stdout, "err: ": p.Stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(r)
			for sc.Scan() {
				h.lines <- tag + sc.Text()
			}
		}()
	}
	go func() {
		wg.Wait()
		close(h.lines)
	}()
	t.Cleanup(func() {
		if !h.exited {
			cmd.Process.Kill()
			cmd.Process.Wait()
		}
	})
	return h
}

// next returns the next line, or false at the end of output or deadline.
func (h *helper) next(timer *time.Timer) (string, bool) {
	select {
	case l, ok := <-h.lines:
		if ok {
			h.seen = append(h.seen, l)
			h.claimed = append(h.claimed, false)
		}
		return l, ok
	case <-timer.C:
		return "", false
	}
}

// expectPrefix waits for an unmatched line starting with prefix and
// returns the rest of it.
func (h *helper) expectPrefix(prefix string) string {
	h.t.Helper()
	for i, l := range h.seen {
		if rest, ok := strings.CutPrefix(l, prefix); ok && !h.claimed[i] {
			h.claimed[i] = true
			return rest
		}
	}
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		l, ok := h.next(timer)
		if !ok {
			h.t.Fatalf("no %q from helper; saw %q", prefix, h.seen)
		}
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			h.claimed[len(h.claimed)-1] = true
			return rest
		}
	}
}

// expect waits for an unmatched line equal to want.
func (h *helper) expect(want string) {
	h.t.Helper()
	if rest := h.expectPrefix(want); rest != "" {
		h.t.Fatalf("got %q, want %q", want+rest, want)
	}
}

func (h *helper) signal(sig syscall.Signal) {
	h.t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		h.t.Fatalf("signal helper: %v", err)
	}
}

// send signals the helper and expects the lines it answers with.
func (h *helper) send(sig syscall.Signal, want ...string) {
	h.t.Helper()
	h.signal(sig)
	for _, w := range want {
		h.expect(w)
	}
}

// exit waits for the helper process to exit, without waiting for its
// output to end (a grandchild may still hold its stderr).
func (h *helper) exit() syscall.WaitStatus {
	h.t.Helper()
	done := make(chan *os.ProcessState, 1)
	go func() {
		ps, _ := h.cmd.Process.Wait()
		done <- ps
	}()
	select {
	case ps := <-done:
		h.exited = true
		return ps.Sys().(syscall.WaitStatus)
	case <-time.After(deadline):
		h.t.Fatalf("helper did not exit; saw %q", h.seen)
	}
	panic("unreachable")
}

// finish reads the rest of the output and waits for the helper to exit.
func (h *helper) finish() syscall.WaitStatus {
	h.t.Helper()
	timer := time.NewTimer(deadline)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-h.lines:
			if ok {
				h.seen = append(h.seen, l)
				h.claimed = append(h.claimed, false)
				continue
			}
			return h.exit()
		case <-timer.C:
			h.t.Fatalf("helper output did not end; saw %q", h.seen)
		}
	}
}

// count is how many lines seen so far equal l.
func (h *helper) count(l string) int {
	n := 0
	for _, s := range h.seen {
		if s == l {
			n++
		}
	}
	return n
}
