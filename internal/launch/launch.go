//go:build unix

package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
)

// Status is how the child ended.
type Status struct {
	// Code is the exit code a shell would report: the child's own code, or
	// 128+N when signal N killed it (SIGINT 130, SIGTERM 143, SIGKILL 137).
	Code int
	// Signal is the signal that killed the child, or 0 if it exited.
	Signal syscall.Signal
}

func (s Status) String() string {
	if s.Signal != 0 {
		return fmt.Sprintf("killed by signal %d (%v), exit code %d", int(s.Signal), s.Signal, s.Code)
	}
	return fmt.Sprintf("exit code %d", s.Code)
}

func statusOf(ps *os.ProcessState) Status {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return Status{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
	}
	return Status{Code: ps.ExitCode()}
}

// Process is a running child. Its methods are safe for concurrent use.
type Process struct {
	proc   *os.Process
	stdout *os.File
	stdin  *os.File // nil unless WithStdinPipe
	// through, if set, is what Pump reads stdout through (ReadStdoutThrough).
	through io.Reader

	done    chan struct{}
	status  Status
	waitErr error

	mu         sync.Mutex
	exited     bool
	forwarding []chan os.Signal // stopped when the child is reaped
}

// Start runs argv[0] with arguments argv[1:], found in PATH the way a shell
// finds it. Stdout is a pipe read through [Process.Stdout]; stderr is
// pi-otel's own stderr; stdin is pi-otel's own stdin unless WithStdinPipe is
// given. The child stays in pi-otel's process group.
//
// If the child cannot be started the error is a *[StartError];
// [ExitCodeForStartError] turns it into the shell's 127 or 126.
func Start(argv []string, opts ...Option) (*Process, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, &StartError{Err: errNoCommand}
	}
	cfg := newConfig(opts)

	cmd := exec.Command(argv[0], argv[1:]...)
	// A shell runs a program found through "." in PATH; so do we.
	if errors.Is(cmd.Err, exec.ErrDot) {
		cmd.Err = nil
	}
	if cmd.Err != nil {
		return nil, startError(argv[0], "", cmd.Err)
	}
	if len(cfg.env) > 0 {
		// exec keeps the last value of a repeated key.
		cmd.Env = append(os.Environ(), cfg.env...)
	}

	var outR, outW *os.File
	var err error
	if cfg.inheritStdout {
		cmd.Stdout = os.Stdout
	} else {
		if outR, outW, err = os.Pipe(); err != nil {
			return nil, startError(argv[0], "", err)
		}
		// *os.File values are handed to the child as they are: no
		// copying goroutines, so the child reads our stdin and writes
		// our stderr directly.
		cmd.Stdout = outW
	}
	cmd.Stderr = os.Stderr
	cmd.Stdin = os.Stdin
	var inR, inW *os.File
	if cfg.stdinPipe {
		if inR, inW, err = os.Pipe(); err != nil {
			closeFiles(outR, outW)
			return nil, startError(argv[0], "", err)
		}
		cmd.Stdin = inR
	}
	cmd.SysProcAttr = sysProcAttr(cfg.parentDeathSig)

	p := &Process{stdout: outR, stdin: inW, done: make(chan struct{})}
	started := make(chan error, 1)
	go p.run(cmd, started)
	err = <-started

	// The child holds its own copies now; ours would keep the pipes open.
	closeFiles(outW, inR)
	if err != nil {
		closeFiles(outR, inW)
		return nil, startError(argv[0], cmd.Path, err)
	}
	p.proc = cmd.Process
	return p, nil
}

// closeFiles closes the files that are not nil.
func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

// run starts the child and reaps it on one locked OS thread. Linux sends
// the parent-death signal when the thread that forked the child exits, not
// when the process does; the Go runtime may retire an idle thread at any
// time, so the forking thread must live, pinned to this goroutine, until
// the child is gone.
func (p *Process) run(cmd *exec.Cmd, started chan<- error) {
	runtime.LockOSThread()
	// Never unlocked: the thread ends with this goroutine, after the reap.
	if err := cmd.Start(); err != nil {
		started <- err
		return
	}
	started <- nil

	err := cmd.Wait()
	if _, exited := errors.AsType[*exec.ExitError](err); err == nil || exited {
		p.status = statusOf(cmd.ProcessState)
	} else {
		p.status = Status{Code: 1}
		p.waitErr = fmt.Errorf("launch: waiting for %s: %w", cmd.Path, err)
	}

	p.mu.Lock()
	p.exited = true
	// Pi is gone: pi-otel's own signal behaviour comes back before Wait
	// returns, so a Ctrl-C during the caller's shutdown acts on pi-otel.
	for _, ch := range p.forwarding {
		signal.Stop(ch)
	}
	p.forwarding = nil
	p.mu.Unlock()

	if p.stdin != nil {
		// Nothing can read it any more; this also frees a writer blocked
		// on a full pipe.
		p.stdin.Close()
	}
	close(p.done)
}

// Pid is the child's process ID.
func (p *Process) Pid() int { return p.proc.Pid }

// Stdout is the read end of the child's stdout. It reaches EOF when every
// process holding the write end has exited, which may be after the child
// itself if the child left a background process behind; Wait does not
// wait for it. The caller closes it; closing it also unblocks a pending
// Read. It is nil with WithInheritStdout.
func (p *Process) Stdout() io.ReadCloser {
	if p.stdout == nil {
		return nil
	}
	return p.stdout
}

// ReadStdoutThrough has Pump read stdout through r, which reads Stdout
// itself: a reader that must see every read of the pipe, below any
// buffering of the caller's. Call it before Pump.
func (p *Process) ReadStdoutThrough(r io.Reader) { p.through = r }

// Stdin is the write end of the child's stdin, or nil without
// WithStdinPipe. Closing it gives the child EOF. It is closed when the
// child exits; writes after that fail.
func (p *Process) Stdin() io.WriteCloser {
	if p.stdin == nil {
		return nil
	}
	return p.stdin
}

// Signal sends sig to the child (its PID only, never its process group,
// which is pi-otel's own). After the child has been reaped it returns
// os.ErrProcessDone.
func (p *Process) Signal(sig os.Signal) error { return p.proc.Signal(sig) }

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait blocks until the child has exited and returns how it ended. It may
// be called any number of times, from any goroutine. The error is non-nil
// only if the child's end could not be observed; Status.Code is then 1.
func (p *Process) Wait() (Status, error) {
	<-p.done
	return p.status, p.waitErr
}
