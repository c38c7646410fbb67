// Package capture records real Pi event streams into testdata/captures, the
// committed fixtures the mapper tests replay. Run it with
//
//	go test -tags realstack ./internal/testutil/capture -run TestCapture -args -update
//
// (add a scenario name to -run to redo just one). Without -update the test
// checks that the committed captures still show what each scenario claims.
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

// Meta is written beside each capture as NAME.meta.json.
type Meta struct {
	Scenario      string   `json:"scenario"`
	Description   string   `json:"description"`
	PiVersion     string   `json:"piVersion"`
	Mode          string   `json:"mode"`
	Args          []string `json:"args"`
	ExitCode      int      `json:"exitCode"`
	Signal        string   `json:"signal,omitempty"`
	Stderr        string   `json:"stderr"`
	ModelRequests int      `json:"modelRequests"`
	// Requests describes each chat request the fake model got, in order.
	Requests     []RequestInfo `json:"requests"`
	ScriptErrors []string      `json:"scriptErrors,omitempty"`
}

// RequestInfo is what the fake model saw of one request.
type RequestInfo struct {
	Summary  bool     `json:"summary,omitempty"` // a compaction summary request
	Roles    []string `json:"roles"`
	Thinking any      `json:"reasoningEffort,omitempty"`
}

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

// Capture is one recorded run.
type Capture struct {
	Meta   Meta
	Stdout []byte // exactly what Pi wrote
	Stdin  []byte // RPC only: exactly what was written to Pi
}

// Records decodes the stdout lines (split on LF only, as Pi's framing says).
func (c *Capture) Records() ([]map[string]any, error) { return decodeLines(c.Stdout) }

func decodeLines(b []byte) ([]map[string]any, error) {
	var out []map[string]any
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("line %d: %v: %.200q", i+1, err, line)
		}
		out = append(out, m)
	}
	return out, nil
}

// lineHook sees every stdout line as it arrives; the process is running.
type lineHook func(line []byte, rec map[string]any, p *os.Process)

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

// Recorder writes captures of one Pi version under its directory.
type Recorder struct {
	Dir string // testdata/captures/pi-VERSION
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

// Load reads a capture written by a Recorder.
func Load(dir, name string) (*Capture, error) {
	meta, err := loadMeta(dir, name)
	if err != nil {
		return nil, err
	}
	c := &Capture{Meta: meta}
	if c.Meta.Mode == "rpc" {
		if c.Stdin, err = os.ReadFile(filepath.Join(dir, name+".in.jsonl")); err != nil {
			return nil, err
		}
		c.Stdout, err = os.ReadFile(filepath.Join(dir, name+".out.jsonl"))
	} else {
		c.Stdout, err = os.ReadFile(filepath.Join(dir, name+".jsonl"))
	}
	return c, err
}

// loadMeta reads the meta file of capture name in dir.
func loadMeta(dir, name string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(filepath.Join(dir, name+".meta.json"))
	if err != nil {
		return m, err
	}
	err = json.Unmarshal(b, &m)
	return m, err
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
