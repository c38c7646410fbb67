// Package otelcol runs one OpenTelemetry Collector binary for a test: the
// project's pi-otel-collector, or Jaeger v2, which is a distribution of the
// Collector. It starts the binary on config files with the variables they
// substitute, waits until its health endpoint answers, and stops it when
// the test ends.
package otelcol

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/proc"
)

// readyTimeout bounds the wait for a health endpoint; it is a liveness guard, not an assertion.
const readyTimeout = 60 * time.Second

// Process is a running collector.
type Process struct {
	Name string
	Opts Options // what it was started with, for a restart on the same ports
	cmd  *exec.Cmd
	logs *proc.Buffer
	done chan struct{}
}

// Logs returns everything the process wrote so far.
func (p *Process) Logs() string { return p.logs.String() }

// Options describes one collector to start.
type Options struct {
	Name     string            // for messages
	Binary   string            // path of the binary
	Config   string            // path of the config file
	Overlays []string          // further config files merged over Config, in order
	Env      map[string]string // variables the config substitutes
	Health   string            // host:port of its health endpoint (GET /status)
	Args     []string          // extra command-line arguments
}

// Start runs the collector with opts, waits until its health endpoint answers 200 and stops it
// when the test ends.
func Start(t testing.TB, opts Options) *Process {
	t.Helper()
	p, err := tryStart(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// StartFresh is Start for options holding ports from freeport.Addr: another process may take such a
// port between freeport.Addr and the collector binding it, so when the collector exits with "address
// already in use", build is called again for fresh ports (up to three attempts).
func StartFresh(t testing.TB, build func() Options) *Process {
	t.Helper()
	var err error
	for range 3 {
		var p *Process
		if p, err = tryStart(t, build()); err == nil {
			return p
		}
		if !errors.Is(err, errPortTaken) {
			break
		}
	}
	t.Fatal(err)
	return nil
}

var errPortTaken = errors.New("a port was taken by another process")

// readyLine is what a collector logs when it has started.
const readyLine = "Everything is ready."

func tryStart(t testing.TB, opts Options) (*Process, error) {
	t.Helper()
	args := []string{"--config=file:" + opts.Config}
	for _, o := range opts.Overlays {
		args = append(args, "--config=file:"+o)
	}
	cmd := exec.Command(opts.Binary, append(args, opts.Args...)...)
	cmd.Env = append(os.Environ(), envList(opts.Env)...)
	logs := &proc.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = proc.Group()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", opts.Name, err)
	}
	p := &Process{Name: opts.Name, Opts: opts, cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.Stop(t) })

	url := "http://" + opts.Health + "/status"
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-p.done:
			if strings.Contains(p.Logs(), "address already in use") {
				return nil, fmt.Errorf("%s: %w:\n%s", opts.Name, errPortTaken, p.Logs())
			}
			return nil, fmt.Errorf("%s exited before becoming healthy:\n%s", opts.Name, p.Logs())
		default:
		}
		// A 200 alone may be another collector's: the port was free when
		// picked, another process may hold it since, and then this one
		// exits with "address already in use". The service says readyLine
		// once every component it runs, the health check among them, has
		// started.
		if ok, _ := get200(url); ok && strings.Contains(p.Logs(), readyLine) {
			return p, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s not healthy at %s after %s:\n%s", opts.Name, url, readyTimeout, p.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop ends the process gracefully (SIGTERM, which flushes its exporters) and waits for it, at
// most 30 s.
func (p *Process) Stop(t testing.TB) { p.StopWithin(t, 30*time.Second) }

// StopWithin is Stop with its own limit, for a collector that drains a queue towards a dead
// backend while it stops: each request it hands on retries until its own deadline first.
func (p *Process) StopWithin(t testing.TB, limit time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s ignored SIGTERM for %v:\n%s", p.Name, limit, p.Logs())
	}
}

// Kill ends the process with SIGKILL, as a crash or an OOM kill would: no flush, no shutdown.
func (p *Process) Kill(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s had already exited:\n%s", p.Name, p.Logs())
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Restart starts the process again with the options it had (same ports, same files). Only for a
// process that has exited.
func (p *Process) Restart(t testing.TB) *Process {
	t.Helper()
	return Start(t, p.Opts)
}

// Validate runs `validate` of the collector binary bin (pi-otel-collector or Jaeger) on config
// (merged with overlays) with env; it returns the output on failure.
func Validate(t testing.TB, bin, config string, env map[string]string, overlays ...string) error {
	t.Helper()
	args := []string{"validate", "--config=file:" + config}
	for _, o := range overlays {
		args = append(args, "--config=file:"+o)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), envList(env)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v:\n%s", err, out)
	}
	return nil
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

func get200(url string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}
