// Package pitest prepares hermetic runs of the real Pi coding agent for
// end-to-end tests: a throwaway HOME and agent dir, a models.json pointing at
// a local fake model, low retry delays, and Node 22 first on PATH.
//
// Tests find Pi and Node through environment variables set by
// scripts/deps.sh. When they are missing the test fails: an e2e test that
// silently skips would let the project claim what it never checked.
package pitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
	"github.com/pi-otel/pi-otel/internal/testutil/proc"
)

// Environment variables naming the real binaries (see scripts/deps.sh).
const (
	EnvPi      = "PI_OTEL_PI"       // path to the Pi 1.6.0 bin
	EnvNodeDir = "PI_OTEL_NODE_DIR" // directory holding the node 22 binary
	EnvPi103   = "PI_OTEL_PI_1_0_3" // path to the Pi 1.0.3 bin
	EnvPi073   = "PI_OTEL_PI_0_73"  // path to the Pi 0.73.x bin
)

const installHint = "run `bash scripts/deps.sh` and `source \"${PI_OTEL_CACHE:-$HOME/.cache/pi-otel}/env.sh\"` (scripts/test.sh does both)"

// Lookup returns the value of env var name, failing tb loudly when it is
// unset or does not name an existing file.
func Lookup(tb testing.TB, name string) string {
	tb.Helper()
	v, err := lookup(name)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func lookup(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("pitest: %s is not set; %s", name, installHint)
	}
	if _, err := os.Stat(v); err != nil {
		return "", fmt.Errorf("pitest: %s=%s: %v; %s", name, v, err, installHint)
	}
	return v, nil
}

// Cost is a model's price in USD per million tokens.
type Cost struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cacheRead"`
	CacheWrite float64 `json:"cacheWrite"`
}

// Model is the single model of the fake provider.
type Model struct {
	ID            string
	ContextWindow int
	MaxTokens     int
	Reasoning     bool
	Cost          Cost
}

// DefaultModel is a non-reasoning model with a non-zero price, so cost
// attributes are exercised.
func DefaultModel() Model {
	return Model{
		ID:            "fake-model",
		ContextWindow: 128000,
		MaxTokens:     4096,
		Cost:          Cost{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
	}
}

// Provider is the provider name written to models.json.
const Provider = "fake"

// Option configures an Env.
type Option = option.Option[config]

type config struct {
	model    Model
	settings map[string]any
	pi       string
	nodeDir  string
}

// WithModel replaces DefaultModel.
func WithModel(m Model) Option {
	return option.Func[config](func(c *config) { c.model = m })
}

// WithSettings deep-merges s over the default settings.json.
func WithSettings(s map[string]any) Option {
	return option.Func[config](func(c *config) { merge(c.settings, s) })
}

// WithPi runs the Pi bin at path instead of $PI_OTEL_PI (older versions).
func WithPi(path string) Option {
	return option.Func[config](func(c *config) { c.pi = path })
}

// WithNodeDir uses the node in dir instead of $PI_OTEL_NODE_DIR.
func WithNodeDir(dir string) Option {
	return option.Func[config](func(c *config) { c.nodeDir = dir })
}

// Env is one prepared, hermetic Pi installation state.
type Env struct {
	Home       string // HOME
	AgentDir   string // PI_CODING_AGENT_DIR
	WorkDir    string // cwd for Pi
	SessionDir string // for --session-dir
	TmpDir     string // TMPDIR: Pi saves full bash outputs there
	Pi         string // the pi bin
	NodeDir    string
	Model      Model

	runID string // marks every process started with Environ, see KillAll

	mu    sync.Mutex
	procs []*os.Process
}

// New prepares an Env under tb.TempDir for a model served at baseURL (e.g.
// fakemodel's URL()). Pi and node come from the environment unless given by
// options; a missing one fails tb. Processes started with Command are
// killed, with their process group, on cleanup.
func New(tb testing.TB, baseURL string, opts ...Option) *Env {
	tb.Helper()
	c := newConfig(opts)
	if c.pi == "" {
		c.pi = Lookup(tb, EnvPi)
	}
	if c.nodeDir == "" {
		c.nodeDir = Lookup(tb, EnvNodeDir)
	}
	e, err := prepare(tb.TempDir(), baseURL, c)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.KillAll)
	return e
}

// Prepare is New without testing: it writes the Env under dir.
func Prepare(dir, baseURL string, opts ...Option) (*Env, error) {
	c := newConfig(opts)
	var err error
	if c.pi == "" {
		if c.pi, err = lookup(EnvPi); err != nil {
			return nil, err
		}
	}
	if c.nodeDir == "" {
		if c.nodeDir, err = lookup(EnvNodeDir); err != nil {
			return nil, err
		}
	}
	return prepare(dir, baseURL, c)
}

func newConfig(opts []Option) *config {
	c := option.Apply(config{
		model: DefaultModel(),
		settings: map[string]any{
			"defaultProvider": Provider,
			"retry": map[string]any{
				"baseDelayMs": 50,
				// Older Pi's SDK retries on its own; keep every retry in Pi's
				// agent loop where the event stream shows it.
				"provider": map[string]any{"maxRetries": 0},
			},
		},
	}, opts)
	c.settings["defaultModel"] = c.model.ID
	return &c
}

func prepare(dir, baseURL string, c *config) (*Env, error) {
	e := &Env{
		Home:       filepath.Join(dir, "home"),
		AgentDir:   filepath.Join(dir, "home", ".pi", "agent"),
		WorkDir:    filepath.Join(dir, "work"),
		SessionDir: filepath.Join(dir, "sessions"),
		TmpDir:     filepath.Join(dir, "tmp"),
		Pi:         c.pi,
		NodeDir:    c.nodeDir,
		Model:      c.model,
		runID:      filepath.Base(dir) + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36),
	}
	for _, d := range []string{e.AgentDir, e.WorkDir, e.SessionDir, e.TmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	models := map[string]any{
		"providers": map[string]any{
			Provider: map[string]any{
				"baseUrl": baseURL,
				"api":     "openai-completions",
				"apiKey":  "fake-key",
				"models": []any{map[string]any{
					"id":            c.model.ID,
					"name":          c.model.ID,
					"contextWindow": c.model.ContextWindow,
					"maxTokens":     c.model.MaxTokens,
					"reasoning":     c.model.Reasoning,
					"input":         []string{"text"},
					"cost":          c.model.Cost,
				}},
			},
		},
	}
	if err := writeJSON(filepath.Join(e.AgentDir, "models.json"), models); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(e.AgentDir, "settings.json"), c.settings); err != nil {
		return nil, err
	}
	return e, nil
}

// Environ is the hermetic environment for Pi: the parent's environment minus
// anything that could reach a real provider or the user's Pi, plus the
// variables that keep Pi offline, and node first on PATH.
func (e *Env) Environ() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "PATH" || k == "TMPDIR" || strings.HasPrefix(k, "PI_") || strings.HasSuffix(k, "_API_KEY") {
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"HOME="+e.Home,
		"PI_CODING_AGENT_DIR="+e.AgentDir,
		"PI_OFFLINE=1",
		"PI_SKIP_VERSION_CHECK=1",
		"PI_TELEMETRY=0",
		"TMPDIR="+e.TmpDir,
		"PATH="+e.NodeDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		RunIDVar+"="+e.runID,
	)
}

// Args prefixes args with the provider and model flags.
func (e *Env) Args(args ...string) []string {
	return append([]string{"--provider", Provider, "--model", e.Model.ID}, args...)
}

// Command builds `pi ARGS…` (ARGS used as given: see Args) in WorkDir with
// Environ, in its own process group so KillAll reaches the bash tools' children
// too.
func (e *Env) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, e.Pi, args...)
	e.setup(cmd)
	return cmd
}

// Wrap builds `name ARGS…` (e.g. pi-otel) with the same environment, work dir
// and process group handling as Command.
func (e *Env) Wrap(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	e.setup(cmd)
	return cmd
}

func (e *Env) setup(cmd *exec.Cmd) {
	cmd.Dir = e.WorkDir
	cmd.Env = e.Environ()
	cmd.SysProcAttr = proc.Group()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// Track registers a started command's process group for KillAll.
func (e *Env) Track(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.procs = append(e.procs, cmd.Process)
}

// RunIDVar is set in Environ to a value unique to the Env, so KillAll can
// find every process that inherited it.
const RunIDVar = "PITEST_RUN_ID"

// KillAll SIGKILLs the process groups of tracked commands and every process
// that inherited this Env's run id. Pi starts bash tools in their own process
// groups and leaves them running when it dies of SIGINT, so neither Pi's exit
// nor its process group is enough.
//
// A process in the middle of an exec shows an empty environment for a moment,
// and one being killed may fork first, so the scan repeats until a pass finds
// nothing marked and nothing caught mid-exec, within killScanBound.
func (e *Env) KillAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.procs {
		// A leader already waited for has freed its pid, which the
		// kernel may have given to another test's process group (pids
		// wrap at 32768 here): its own group's processes, if any, are
		// marked and found by the scan below.
		if p.Signal(syscall.Signal(0)) == nil {
			_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		}
	}
	e.procs = nil
	mark := RunIDVar + "=" + e.runID
	deadline := time.Now().Add(killScanBound)
	for {
		marked, execing := scanEnv(mark)
		for _, pid := range marked {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if len(marked) == 0 && len(execing) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killScanBound bounds KillAll's rescans; an exec completes in far less.
const killScanBound = 2 * time.Second

// scanEnv lists the live processes whose initial environment holds kv, and
// those caught between an exec's new image and its arguments, whose
// environment cannot be read yet.
func scanEnv(kv string) (marked, execing []int) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, nil
	}
	want := []byte(kv)
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := "/proc/" + ent.Name() + "/"
		b, err := os.ReadFile(dir + "environ")
		if err != nil {
			continue
		}
		if len(b) == 0 {
			if midExec(dir) {
				execing = append(execing, pid)
			}
			continue
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if bytes.Equal(v, want) {
				marked = append(marked, pid)
				break
			}
		}
	}
	return marked, execing
}

// pfKthread is the kernel's PF_KTHREAD flag in /proc/PID/stat.
const pfKthread = 0x00200000

// midExec reports whether the process under dir (with an empty environment)
// is a user process that has no arguments either: one whose exec has
// swapped in the new image but not yet laid out its arguments. Kernel
// threads and zombies have neither and are left out; a process started with
// an empty environment still has its arguments.
func midExec(dir string) bool {
	if b, err := os.ReadFile(dir + "cmdline"); err != nil || len(b) > 0 {
		return false
	}
	b, err := os.ReadFile(dir + "stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 7 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	return err == nil && flags&pfKthread == 0
}

// Result is a finished process.
type Result struct {
	Stdout, Stderr []byte
	ExitCode       int // -1 when killed by a signal
}

// Run runs cmd to completion (tracked for KillAll) and collects its output.
// A non-zero exit is a Result, not an error.
func (e *Env) Run(cmd *exec.Cmd) (Result, error) {
	var out, errb bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	if cmd.Stderr == nil {
		cmd.Stderr = &errb
	}
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	e.Track(cmd)
	err := cmd.Wait()
	res := Result{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: cmd.ProcessState.ExitCode()}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return res, err
	}
	return res, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// merge copies src into dst, recursing into nested objects.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				merge(dv, sv)
				continue
			}
			cp := map[string]any{}
			merge(cp, sv)
			dst[k] = cp
			continue
		}
		dst[k] = v
	}
}
