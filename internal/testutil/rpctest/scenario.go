package rpctest

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/testutil/fakemodel"
	"github.com/pi-otel/pi-otel/internal/testutil/pitest"
)

//go:embed testdata/ext.ts
var extensionSource []byte

// Scenario is one scripted RPC session against the real Pi and a fake
// model. The same scenarios record the transcripts the rpc unit tests
// replay and drive the end-to-end tests through pi-otel.
type Scenario struct {
	Name string
	// Script is what the fake model answers, one response per request.
	Script []fakemodel.Response
	// Summary answers Pi's compaction summary requests, when set.
	Summary  string
	Settings map[string]any
	// Extension loads testdata/ext.ts with -e.
	Extension bool
	// Env is added to the peer's environment (Pi inherits it through a
	// proxy).
	Env []string
	// Drive is the controller's part; the Driver keeps its first error. The
	// runner closes stdin afterwards unless Drive did.
	Drive func(d *Driver)
	// Exit is the exit code the peer must end with.
	Exit int
}

// Peer builds the process a scenario talks to: Pi itself (Direct), or a
// proxy in front of it. piArgs are Pi's arguments; cmd.Env is set by the
// runner afterwards only when the Peer leaves it nil.
type Peer func(env *pitest.Env, piArgs []string) *exec.Cmd

// Direct runs Pi itself.
func Direct(env *pitest.Env, piArgs []string) *exec.Cmd {
	return env.Command(context.Background(), piArgs...)
}

// Result is one finished scenario run.
type Result struct {
	Lines []Line
	// Sent and Received are the exact bytes of each direction.
	Sent, Received []byte
	// Dir is the directory the run used; Pi's paths start with it.
	Dir      string
	ExitCode int
	Stderr   string
	// Requests is the number of chat requests the fake model served.
	Requests int
}

// Run plays s against the process peer builds, under dir (a fresh
// temporary directory).
func (s Scenario) Run(dir string, peer Peer) (*Result, error) {
	opts := []fakemodel.Option{fakemodel.WithScript(s.Script...)}
	if s.Summary != "" {
		opts = append(opts, fakemodel.WithSummaries(s.Summary, 2))
	}
	srv, err := fakemodel.New(opts...)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	env, err := pitest.Prepare(dir, srv.URL(), pitest.WithSettings(s.Settings))
	if err != nil {
		return nil, err
	}
	defer env.KillAll()
	args := env.Args("--mode", "rpc", "--no-session")
	if s.Extension {
		ext := filepath.Join(dir, "ext.ts")
		if err := os.WriteFile(ext, extensionSource, 0o644); err != nil {
			return nil, err
		}
		args = append(args, "-e", ext)
	}
	cmd := peer(env, args)
	cmd.Env = append(cmd.Env, s.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	c, err := Start(cmd)
	if err != nil {
		return nil, err
	}
	env.Track(cmd)
	d := &Driver{C: c, Timeout: 60 * time.Second}
	s.Drive(d)
	derr := d.Err()
	if !d.closed {
		_ = c.CloseStdin()
	}
	code, werr := c.WaitExit(90 * time.Second)
	res := &Result{Lines: c.Lines(), Sent: c.Sent(), Received: c.Received(), Dir: dir,
		ExitCode: code, Stderr: stderr.String(), Requests: len(srv.ChatRequests())}
	if derr != nil {
		return res, fmt.Errorf("scenario %s: %w (exit code %d; last records:\n%s\nstderr: %s)",
			s.Name, derr, code, tail(res.Lines, 6), clipString(res.Stderr, 2000))
	}
	if werr != nil {
		return res, fmt.Errorf("scenario %s: %w", s.Name, werr)
	}
	if code != s.Exit {
		return res, fmt.Errorf("scenario %s: exit code %d, want %d (stderr: %s)", s.Name, code, s.Exit, clipString(res.Stderr, 2000))
	}
	if errs := srv.ScriptErrors(); len(errs) > 0 {
		return res, fmt.Errorf("scenario %s: fake model: %s", s.Name, strings.Join(errs, "; "))
	}
	return res, nil
}

// tail renders the last n transcript lines.
func tail(lines []Line, n int) string {
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "  %s %s\n", l.Dir, head(string(l.Raw), 200))
	}
	return b.String()
}

func clipString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Driver is the controller side of a scenario. Its methods keep the first
// error and do nothing after it, so a scenario reads as a script.
type Driver struct {
	C       *Controller
	Timeout time.Duration
	cur     Cursor
	err     error
	closed  bool
}

// Err is the first error met.
func (d *Driver) Err() error { return d.err }

// Send writes one line and an LF.
func (d *Driver) Send(line string) {
	if d.err == nil {
		d.err = d.C.Send(line)
	}
}

// SendRaw writes bytes as they are.
func (d *Driver) SendRaw(b []byte) {
	if d.err == nil {
		d.err = d.C.SendRaw(b)
	}
}

// Wait waits for a record after the previous one waited for.
func (d *Driver) Wait(match func(Line) bool) Line {
	if d.err != nil {
		return Line{}
	}
	l, cur, err := d.C.WaitAfter(d.cur, d.Timeout, match)
	if err != nil {
		d.err = err
		return Line{}
	}
	d.cur = cur
	return l
}

// Call sends line, a command with an id, and waits for the response
// carrying that id.
func (d *Driver) Call(line string) Line {
	var cmd struct {
		ID string `json:"id"`
	}
	if d.err == nil {
		d.err = json.Unmarshal([]byte(line), &cmd)
	}
	d.Send(line)
	return d.Wait(IsResponseID(cmd.ID))
}

// StartTool sends line, a prompt, and waits until the model's call of
// tool starts.
func (d *Driver) StartTool(line, tool string) {
	d.Send(line)
	d.Wait(IsToolStart(tool))
}

// Settle sends line, a prompt, and waits for the agent to settle.
func (d *Driver) Settle(line string) {
	d.Send(line)
	d.Wait(IsType("agent_settled"))
}

// Answer waits for a dialog of method and sends answer, a JSON object
// body such as `"confirmed":true`, with the request's id.
func (d *Driver) Answer(method, answer string) {
	l := d.Wait(func(l Line) bool { return l.Type() == "extension_ui_request" && l.Str("method") == method })
	d.Send(fmt.Sprintf(`{"type":"extension_ui_response","id":%q,%s}`, l.Str("id"), answer))
}

// CloseStdin gives the peer EOF.
func (d *Driver) CloseStdin() {
	if d.err == nil && !d.closed {
		d.closed = true
		d.err = d.C.CloseStdin()
	}
}

// Signal sends sig to the peer process.
func (d *Driver) Signal(sig syscall.Signal) {
	if d.err == nil {
		d.err = d.C.Cmd().Process.Signal(sig)
	}
}

// Pause sleeps; scenarios use it only where Pi's own timing is the point
// (a tool that must be running when it is aborted).
func (d *Driver) Pause(t time.Duration) {
	if d.err == nil {
		time.Sleep(t)
	}
}

// IsToolStart matches tool_execution_start of tool.
func IsToolStart(tool string) func(Line) bool {
	return func(l Line) bool { return l.Type() == "tool_execution_start" && l.Str("toolName") == tool }
}
