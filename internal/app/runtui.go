package app

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/launch"
	"github.com/pi-otel/pi-otel/internal/outfile"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/mapper"
)

// piMode is the --mode of a Pi command line ("" for the TUI or -p text).
func piMode(argv []string) string {
	for i, a := range argv {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--mode="); ok {
			return v
		}
		if a == "--mode" && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
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
func runTUI(env Env, cfg config.Config, argv []string) int {
	if writesNoSession(argv[1:]) {
		return runUntraced(env, argv) // help, version, package commands: no run to trace
	}
	if _, ok := piFlag(argv, true, "--no-session"); ok {
		fmt.Fprintln(env.Stderr, "pi-otel: pi runs with --no-session and writes no session file: nothing to trace")
		return runUntraced(env, argv)
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
	argv = pinSession(argv, dir, owner)

	// Everything pi-otel writes waits until Pi gives the terminal back.
	held := &outfile.Buffer{}
	quietEnv := env
	quietEnv.Stderr = held
	sp, err := newSessionPipeline(quietEnv, cfg)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	sp.exitOut = env.Stderr // the last flush comes after Pi has ended
	// The follower takes its bearings before Pi starts, so that nothing
	// Pi writes is mistaken for history.
	var status launch.Status
	var relayed func() syscall.Signal
	fcfg := sp.followerConfig(quietEnv, cfg)
	fcfg.Dirs = []string{dir}
	fcfg.Accept = owner.Accept
	fcfg.Settle = config.DefaultSettle
	fcfg.CloseAfter = config.DefaultCloseAfter
	fcfg.Ending = func() (mapper.Ending, bool) {
		if relayed == nil { // Pi never started
			return mapper.Ending{}, false
		}
		return ending(status, relayed()), true
	}
	ready := make(chan struct{})
	fcfg.Ready = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	f := sessionwatch.New(fcfg)
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		done <- err
	}

	proc, err := launch.Start(argv, launch.WithInheritStdout())
	if err != nil {
		cancel()
		<-done
		cleanPrecreated(owner.Created)
		fmt.Fprintf(held, "pi-otel: %v\n", err)
		sp.summary(nil)
		_, _ = held.WriteTo(env.Stderr)
		return launch.ExitCodeForStartError(err)
	}
	owner.SetPID(proc.Pid())
	var stop func()
	relayed, stop = superviseSignals(proc)
	defer stop()

	status, werr := proc.Wait()
	if werr != nil {
		fmt.Fprintf(held, "pi-otel: waiting for pi: %v\n", werr)
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintf(held, "pi-otel: %v\n", err)
	}
	if n := len(owner.Ambiguous()); n > 0 && !cfg.Quiet {
		fmt.Fprintf(held, "pi-otel: %d session files written while another Pi ran in %s were not traced: pi-otel cannot tell whose they are\n", n, dir)
	}
	cleanPrecreated(owner.Created)
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
// that its file is known for certain.
func pinSession(argv []string, dir string, o *sessionwatch.Owner) []string {
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
	if !knowsSessionID(argv[0]) {
		return argv
	}
	// A new session: pi-otel writes its header first, under an id of its
	// own, and has Pi open it with --session-id. Pi then appends to a file
	// known for certain, exactly as it would to one it made itself.
	id, path, err := precreate(dir, o.Cwd)
	if err != nil {
		return argv
	}
	o.IDs = append(o.IDs, id)
	o.Paths = append(o.Paths, path)
	o.Created = path
	return append([]string{argv[0], "--session-id", id}, argv[1:]...)
}

// precreate writes a session header in dir as Pi 1.x would for a new
// session, in a file named as Pi names them.
func precreate(dir, cwd string) (id, path string, err error) {
	now := time.Now().UTC()
	id = newUUIDv7(now)
	stamp := now.Format("2006-01-02T15:04:05.000Z")
	hdr, err := json.Marshal(struct {
		Type      string `json:"type"`
		Version   int    `json:"version"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		Cwd       string `json:"cwd"`
	}{"session", 3, id, stamp, cwd})
	if err != nil {
		return "", "", err
	}
	// Modes as Pi's own mkdirSync and openSync give them: the umask decides.
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", "", err
	}
	name := strings.NewReplacer(":", "-", ".", "-").Replace(stamp) + "_" + id + ".jsonl"
	path = filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return "", "", err
	}
	_, err = f.Write(append(hdr, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return "", "", err
	}
	return id, path, nil
}

// cleanPrecreated removes the file precreate wrote if Pi never put a
// message in it: Pi itself leaves no file for a session without one.
func cleanPrecreated(path string) {
	if path == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil || bytes.Contains(b, []byte(`"type":"message"`)) {
		return
	}
	os.Remove(path)
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
// (Pi 1.x; 0.x does not): its package.json, next to the script the command
// resolves to, says which version it is. Anything not recognisably Pi gets
// no extra flag.
func knowsSessionID(cmd string) bool {
	path, err := exec.LookPath(cmd)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	for d := filepath.Dir(real); d != filepath.Dir(d); d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "package.json"))
		if err != nil {
			continue
		}
		var pkg struct{ Name, Version string }
		if json.Unmarshal(b, &pkg) != nil || !strings.HasSuffix(pkg.Name, "/pi-coding-agent") {
			return false
		}
		major, _, _ := strings.Cut(pkg.Version, ".")
		return major != "" && major != "0"
	}
	return false
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
func runUntraced(env Env, argv []string) int {
	proc, err := launch.Start(argv, launch.WithInheritStdout())
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return launch.ExitCodeForStartError(err)
	}
	_, stop := superviseSignals(proc)
	defer stop()
	status, err := proc.Wait()
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: waiting for pi: %v\n", err)
	}
	return status.Code
}
