//go:build realstack

package capture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
	"github.com/pi-otel/pi-otel/internal/testutil/rpctest"
)

// What records captures: it runs the real Pi, so it builds only for the
// realstack tests that call it.

func describe(reqs []fakemodel.Request) []RequestInfo {
	out := make([]RequestInfo, 0, len(reqs))
	for _, r := range reqs {
		info := RequestInfo{Summary: fakemodel.IsSummaryRequest(r), Roles: []string{}}
		if c, err := r.Chat(); err == nil {
			for _, m := range c.Messages {
				info.Roles = append(info.Roles, m.Role)
			}
		}
		var extra struct {
			ReasoningEffort any `json:"reasoning_effort"`
		}
		if r.Decode(&extra) == nil {
			info.Thinking = extra.ReasoningEffort
		}
		out = append(out, info)
	}
	return out
}

type runSpec struct {
	env     *pitest.Env
	args    []string
	onLine  lineHook
	rpc     func(d *rpctest.Driver)
	timeout time.Duration
}

type runResult struct {
	stdout, stdin []byte
	stderr        string
	exitCode      int
	signal        string
}

// run starts Pi, streams its stdout through the hooks (or drives it over
// RPC) and waits for it.
func run(spec runSpec) (runResult, error) {
	timeout := spec.timeout
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := spec.env.Command(ctx, spec.args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if spec.rpc != nil {
		return runRPC(ctx, spec, cmd, &stderr, timeout)
	}
	stdout, err := proc.Run(cmd, func(*os.Process) { spec.env.Track(cmd) }, func(line []byte, p *os.Process) {
		if spec.onLine != nil {
			var rec map[string]any
			_ = json.Unmarshal(bytes.TrimRight(line, "\r\n"), &rec)
			spec.onLine(line, rec, p)
		}
	})
	if err != nil {
		return runResult{}, err
	}
	res := result(cmd, stdout, nil, &stderr)
	if ctx.Err() != nil {
		return res, fmt.Errorf("pi did not finish within %v (stderr: %s)", timeout, stderr.String())
	}
	return res, nil
}

// runRPC drives Pi through rpctest's controller, which keeps the exact
// bytes of both directions, and closes its stdin after the last step.
func runRPC(ctx context.Context, spec runSpec, cmd *exec.Cmd, stderr *bytes.Buffer, timeout time.Duration) (runResult, error) {
	c, err := rpctest.Start(cmd)
	if err != nil {
		return runResult{}, err
	}
	spec.env.Track(cmd)
	d := &rpctest.Driver{C: c, Timeout: timeout}
	spec.rpc(d)
	_ = c.CloseStdin()
	// ctx kills Pi at the deadline, so the exit comes within it.
	if _, err := c.WaitExit(timeout + time.Minute); err != nil {
		return runResult{stdout: c.Received(), stdin: c.Sent(), stderr: stderr.String()}, err
	}
	res := result(cmd, c.Received(), c.Sent(), stderr)
	if ctx.Err() != nil {
		return res, fmt.Errorf("pi did not finish within %v (stderr: %s)", timeout, stderr.String())
	}
	return res, d.Err()
}

// result is how the exited cmd ended, with what it read and wrote.
func result(cmd *exec.Cmd, stdout, stdin []byte, stderr *bytes.Buffer) runResult {
	res := runResult{stdout: stdout, stdin: stdin, stderr: stderr.String(), exitCode: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(interface{ Signaled() bool }); ok && ws.Signaled() {
		res.signal = cmd.ProcessState.String()
	}
	return res
}

func (r Recorder) write(c *Capture) error {
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	name := c.Meta.Scenario
	meta, err := json.MarshalIndent(c.Meta, "", "  ")
	if err != nil {
		return err
	}
	if c.Meta.Mode == "rpc" {
		if err := os.WriteFile(filepath.Join(r.Dir, name+".in.jsonl"), c.Stdin, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(r.Dir, name+".out.jsonl"), c.Stdout, 0o644); err != nil {
			return err
		}
	} else if err := os.WriteFile(filepath.Join(r.Dir, name+".jsonl"), c.Stdout, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.Dir, name+".meta.json"), append(meta, '\n'), 0o644)
}

func piVersion(env *pitest.Env) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := env.Run(env.Command(ctx, "--version"))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(res.Stdout))
	if v == "" {
		v = strings.TrimSpace(string(res.Stderr))
	}
	return v, nil
}

// modelServer starts a fake model for one scenario.
func modelServer(s Scenario) (*fakemodel.Server, error) {
	opts := []fakemodel.Option{fakemodel.WithScript(s.Script...)}
	if s.Summary != "" {
		opts = append(opts, fakemodel.WithSummaries(s.Summary, 3))
	}
	return fakemodel.New(opts...)
}

// withSessionDir turns a scenario's --no-session into --session-dir dir.
func withSessionDir(args []string, dir string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if a == "--no-session" {
			out = append(out, "--session-dir", dir)
			continue
		}
		out = append(out, a)
	}
	return out
}

// sessionFile reads the one session file Pi left in dir.
func sessionFile(dir string) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("%d session files in %s, want 1: %v", len(files), dir, files)
	}
	return os.ReadFile(files[0])
}

func writeSession(dir string, c *SessionCapture) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	name := c.Meta.Scenario
	if err := os.WriteFile(filepath.Join(dir, name+".jsonl"), c.Session, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".stream.jsonl"), c.Stdout, 0o644); err != nil {
		return err
	}
	if c.Meta.Mode == "rpc" {
		if err := os.WriteFile(filepath.Join(dir, name+".in.jsonl"), c.Stdin, 0o644); err != nil {
			return err
		}
	}
	meta, err := json.MarshalIndent(c.Meta, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".meta.json"), append(meta, '\n'), 0o644)
}

// writeMetaOnly writes NAME.meta.json for a capture with no stream (TUI).
func writeMetaOnly(dir string, c *Capture) error {
	meta, err := json.MarshalIndent(c.Meta, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, c.Meta.Scenario+".meta.json"), append(meta, '\n'), 0o644)
}
