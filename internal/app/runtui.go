package app

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/internal/outfile"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
)

// piMode is the --mode of a Pi command line ("" for the TUI or -p text).
func piMode(argv []string) string {
	mode, _ := piFlag(argv, false, "--mode")
	return mode
}

// piFlag returns the value of a Pi flag given as "--name v" or
// "--name=v", and whether it is there; boolean flags have no value.
func piFlag(argv []string, boolean bool, names ...string) (string, bool) {
	for i, a := range argv {
		if a == "--" {
			break
		}
		for _, n := range names {
			if a == n {
				if boolean {
					return "", true
				}
				if i+1 < len(argv) {
					return argv[i+1], true
				}
				return "", true
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok && !boolean {
				return v, true
			}
		}
	}
	return "", false
}

// runTUI runs Pi on the real terminal (its TUI, or -p text output) and
// traces the session files it writes, each run as it completes, the rest
// when Pi exits. pi-otel stays silent while Pi owns the terminal: its own
// lines, and the console exporter's trees, come after Pi exits.
func runTUI(ctx context.Context, env Env, cfg config.Config, argv []string) int {
	if writesNoSession(argv[1:]) {
		return runUntraced(ctx, env, argv) // help, version, package commands: no run to trace
	}
	if _, ok := piFlag(argv, true, "--no-session"); ok {
		fmt.Fprintln(env.Stderr, "pi-otel: pi runs with --no-session and writes no session file: nothing to trace")
		return runUntraced(ctx, env, argv)
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	dirs := sessionwatch.PiDirs{Getenv: env.Getenv, Home: homeDir(env), Cwd: cwd, Project: true}
	dir, custom := "", true
	if v, ok := piFlag(argv, false, "--session-dir"); ok && v != "" {
		dir = dirs.Abs(v)
	} else {
		root, isCustom, _ := dirs.SessionRoot()
		dir, custom = root, isCustom
		if !isCustom {
			dir = sessionwatch.ProjectDir(root, cwd)
		}
	}
	owner := &sessionwatch.Owner{Dir: dir, Custom: custom, Cwd: cwd}
	argv = pinSession(argv, dir, owner, isTerminal(os.Stdin) && isTerminal(os.Stdout))

	// Everything pi-otel writes waits until Pi gives the terminal back.
	held := &outfile.Buffer{}
	quietEnv := env
	quietEnv.Stderr = held
	// Each bash call gets its own call's context: the session file's
	// reader names a call's span before the call ends.
	cc := openCallContexts(quietEnv, cfg)
	var status launch.Status
	var relayed func() syscall.Signal
	sp, err := newSessionPipeline(quietEnv, cfg, sessionConfig{
		Telemetry: liveFacts(argv, cwd),
		Calls:     cc,
		Exit:      func() agentmap.Ending { return ending(status, relayed()) },
		ExitOut:   env.Stderr, // the last flush comes after Pi has ended
	})
	if err != nil {
		cc.close()
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	cc.followFiles([]string{dir})
	// The follower takes its bearings before Pi starts, so that nothing
	// Pi writes is mistaken for history.
	fcfg := sp.followerConfig()
	// What the first scan says of the folder itself (it does not exist
	// yet, it holds no session yet) is how Pi finds it before its first
	// message, and would come out only after Pi has exited, when it is
	// no longer true: it is not said. It is the one report whose only
	// argument is the folder.
	var started atomic.Bool
	if logf := fcfg.Logf; logf != nil {
		fcfg.Logf = func(format string, args ...any) {
			if !started.Load() && len(args) == 1 && args[0] == any(dir) {
				return
			}
			logf(format, args...)
		}
	}
	fcfg.Dirs = []string{dir}
	fcfg.Accept = owner.Accept
	fcfg.Settle = config.DefaultSettle
	fcfg.CloseAfter = config.DefaultCloseAfter
	fcfg.Exited = func() bool { return relayed != nil } // else Pi never started
	ready := make(chan struct{})
	fcfg.Ready = func() {
		started.Store(true)
		close(ready)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := sessionwatch.New(fcfg)
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		done <- err
	}

	proc, err := launch.Start(argv, launch.WithInheritStdout(), launch.WithEnv(cc.env(env.Getenv)...))
	if err != nil {
		cancel()
		<-done
		cc.close()
		fmt.Fprintf(held, "pi-otel: %v\n", err)
		sp.summary(nil)
		_, _ = held.WriteTo(env.Stderr)
		return launch.ExitCodeForStartError(err)
	}
	owner.SetPID(proc.Pid())
	var stop func()
	relayed, stop = superviseSignals(ctx, proc)
	defer stop()

	status, werr := proc.Wait()
	if werr != nil {
		fmt.Fprintf(held, "pi-otel: waiting for pi: %v\n", werr)
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintf(held, "pi-otel: %v\n", err)
	}
	cc.close()
	if n := cc.missed(); n > 0 && !cfg.Quiet {
		fmt.Fprintf(held, "pi-otel: %d bash %s without %s own trace context\n", n, map[bool]string{true: "call", false: "calls"}[n == 1], map[bool]string{true: "its", false: "their"}[n == 1])
	}
	if n := len(owner.Ambiguous()); n > 0 && !cfg.Quiet {
		fmt.Fprintf(held, "pi-otel: %d session files written while another Pi ran in %s were not traced: pi-otel cannot tell whose they are\n", n, dir)
	}
	sp.summary(nil)
	_, _ = held.WriteTo(env.Stderr)
	return status.Code
}

// writesNoSession reports Pi command lines that run no agent: its package
// and config commands (the first argument), help, version, the model list
// and HTML export.
func writesNoSession(args []string) bool {
	if len(args) > 0 {
		switch args[0] {
		case "install", "uninstall", "remove", "update", "list", "config":
			return true
		}
	}
	_, ok := piFlag(args, true, "--help", "-h", "--version", "-v", "--list-models", "--export")
	return ok
}

// pinSession notes the session file Pi will write first. A new session
// gets an id from pi-otel (--session-id) when this Pi knows the flag, so
// that its file is known for certain once Pi writes it. Nothing is
// written in Pi's folder: Pi creates the file itself, at its first
// message, exactly as without pi-otel, so that other Pis' --continue and
// /resume see what they would see without it.
//
// tui says Pi gets terminals for stdin and stdout; without them, or with
// -p, Pi runs in print mode.
func pinSession(argv []string, dir string, o *sessionwatch.Owner, tui bool) []string {
	if v, ok := piFlag(argv, false, "--session-id"); ok {
		o.IDs = append(o.IDs, v)
		return argv
	}
	if v, ok := piFlag(argv, false, "--session"); ok {
		if strings.ContainsAny(v, `/\`) || strings.HasSuffix(v, ".jsonl") {
			if abs, err := filepath.Abs(v); err == nil {
				o.Paths = append(o.Paths, abs)
			}
		} else {
			o.IDs = append(o.IDs, v)
		}
		return argv
	}
	if _, ok := piFlag(argv, true, "--continue", "-c"); ok {
		if p := newestSession(dir); p != "" {
			o.Paths = append(o.Paths, p)
		}
		return argv
	}
	if _, ok := piFlag(argv, true, "--resume", "-r"); ok {
		return argv // picked in the TUI: rule 4 decides
	}
	if _, ok := piFlag(argv, false, "--fork"); ok {
		return argv // its header names the parent, not ours
	}
	if _, ok := piFlag(argv, true, "-p", "--print"); ok || !tui {
		// Print mode: an id pi-otel gave would make Pi print a warning
		// that no TUI frame clears (see below); rules 3 and 4 decide.
		return argv
	}
	if !knowsSessionID(argv[0]) {
		return argv
	}
	// A new session: Pi 1.x takes an unknown --session-id as the id of a
	// new session, and creates its file only when it first persists a
	// message (SessionManager.create, then _persist). Pi says so in one
	// warning line on stderr, which the TUI's first frame clears.
	id := newUUIDv7(time.Now())
	o.IDs = append(o.IDs, id)
	return append([]string{argv[0], "--session-id", id}, argv[1:]...)
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newestSession is the file --continue resumes: the most recently
// modified session in dir.
func newestSession(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var best string
	var at time.Time
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		fi, err := e.Info()
		if err == nil && fi.ModTime().After(at) {
			best, at = filepath.Join(dir, e.Name()), fi.ModTime()
		}
	}
	return best
}

// knowsSessionID reports whether the Pi that cmd runs takes --session-id
// (Pi 1.x; 0.x does not). Anything not recognisably Pi gets no extra flag.
func knowsSessionID(cmd string) bool {
	major, _, _ := strings.Cut(piVersion(cmd), ".")
	return major != "" && major != "0"
}

// piVersion is the version of the Pi that cmd runs, as its package.json,
// next to the script the command resolves to, says: a few file reads,
// where pi --version would start Node. "" when cmd is not recognisably
// Pi.
func piVersion(cmd string) string {
	path, err := exec.LookPath(cmd)
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	for d := filepath.Dir(real); d != filepath.Dir(d); d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "package.json"))
		if err != nil {
			continue
		}
		var pkg struct{ Name, Version string }
		if json.Unmarshal(b, &pkg) != nil || !strings.HasSuffix(pkg.Name, "/pi-coding-agent") {
			return ""
		}
		return pkg.Version
	}
	return ""
}

// newUUIDv7 is a time-ordered UUID, the kind Pi gives its sessions.
func newUUIDv7(t time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6] = b[6]&0x0f | 0x70
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// runUntraced runs Pi on the terminal and returns its exit code.
func runUntraced(ctx context.Context, env Env, argv []string) int {
	proc, err := launch.Start(argv, launch.WithInheritStdout())
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return launch.ExitCodeForStartError(err)
	}
	_, stop := superviseSignals(ctx, proc)
	defer stop()
	status, err := proc.Wait()
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: waiting for pi: %v\n", err)
	}
	return status.Code
}
