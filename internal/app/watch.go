package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
)

// Watch follows Pi's session directories and traces every run as it
// completes, until SIGINT, SIGTERM or SIGHUP, or until ctx ends.
func Watch(ctx context.Context, env Env, args []string) int {
	// SIGHUP (the terminal closed, or a service manager's stop) ends
	// watch as SIGTERM does: a final flush and the summary. There is no
	// reload: every setting is read at start.
	ctx, stop := env.Signals.stopContext(ctx)
	defer stop()
	return watch(ctx, env, args)
}

// watch is Watch until ctx ends.
func watch(ctx context.Context, env Env, args []string) int {
	cfg, fs, code := parse(env, "watch", "[flags] [DIR...]", args, config.RegisterWatchFlags)
	if code >= 0 {
		return code
	}
	wcfg, err := config.LoadWatch(fs, env.Getenv)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	for _, w := range wcfg.Warnings {
		fmt.Fprintf(env.Stderr, "pi-otel: %s\n", w)
	}
	dirs := fs.Args()
	// A DIR that is not a folder (a symlink is judged by what it points
	// to), followed, would hold nothing, ever: watch would wait on it in
	// silence. A DIR not there yet is fine: it is waited for.
	notFolder := false
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && !fi.IsDir() {
			fmt.Fprintf(env.Stderr, "pi-otel watch: %s is not a folder; give the folders Pi writes session files in (pi-otel replay --follow FILE follows one file); see pi-otel watch --help\n", d)
			notFolder = true
		}
	}
	if notFolder {
		return 2
	}
	home := homeDir(env)
	if len(dirs) == 0 {
		cwd, _ := os.Getwd()
		// Pi's root is waited for if not there yet; oh-my-pi's is
		// followed when it is.
		roots, err := sessionwatch.PiDirs{Getenv: env.Getenv, Home: home, Cwd: cwd}.DefaultRoots()
		if err != nil && !cfg.Quiet {
			fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		}
		dirs = roots
	}
	for i, d := range dirs {
		if abs, err := filepath.Abs(d); err == nil {
			dirs[i] = abs
		}
	}
	state := cmp.Or(wcfg.State, sessionwatch.DefaultStatePath(env.Getenv, home))

	// One watcher per state, taken before the pipeline so that a second
	// watcher sends nothing, not even the spool.
	lock, code := lockState(ctx, env, cfg, wcfg, state)
	if lock == nil {
		return code
	}
	defer lock.Release()

	// No live Pi to protect: a backfill reads only as fast as the exporter
	// takes spans, and nothing is dropped to be traced again (until a
	// signal, when a full queue drops and the state stays put).
	cc := openWatchContexts(env, cfg, home)
	sp, err := newSessionPipeline(env, cfg, sessionConfig{Telemetry: []telemetry.Option{telemetry.WithBackpressure(ctx)}, Calls: cc})
	if err != nil {
		cc.close()
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	defer cc.close()

	fcfg := sp.followerConfig()
	fcfg.Dirs = dirs
	cc.followFiles(dirs)
	fcfg.StatePath = state
	fcfg.Settle = wcfg.Settle
	fcfg.CloseAfter = wcfg.CloseAfter
	fcfg.Poll = wcfg.Poll
	switch {
	case wcfg.SinceAll:
		fcfg.Since = sessionwatch.SinceAll
	case wcfg.Since > 0:
		fcfg.Since = time.Now().Add(-wcfg.Since)
	}
	if !cfg.Quiet {
		fmt.Fprintf(env.Stderr, "pi-otel: watching %s (state %s)\n", strings.Join(dirs, ", "), state)
	}
	f := sessionwatch.New(fcfg)
	runErr := f.Run(ctx)
	// The error before the summary, which stays the last line: what
	// was traced and sent despite it.
	if runErr != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", runErr)
	}
	st := f.Stats()
	sp.summary(&st)
	switch {
	case errors.Is(runErr, sessionwatch.ErrState):
		return ExitState
	case runErr != nil:
		return 1
	}
	return 0
}

// ExitState is watch's exit code when its state cannot be saved (a full
// disk, a read-only folder): a restart would fail the same way, so the
// shipped systemd unit does not restart on it (RestartPreventExitStatus),
// where it would export again, at every start, what no state recorded.
const ExitState = 73 // EX_CANTCREAT in sysexits.h

// lockState takes the state's lock, or says why not and returns the exit
// code.
func lockState(ctx context.Context, env Env, cfg config.Config, wcfg config.Watch, state string) (*sessionwatch.Lock, int) {
	lock, err := sessionwatch.AcquireLock(ctx, state, wcfg.WaitLock, 500*time.Millisecond, func(le *sessionwatch.LockedError) {
		if !cfg.Quiet {
			fmt.Fprintf(env.Stderr, "pi-otel: state %s is in use: %v; waiting for it to be released (--wait-lock)\n", state, le)
		}
	})
	var le *sessionwatch.LockedError
	switch {
	case err == nil:
		return lock, 0
	case errors.As(err, &le):
		fmt.Fprintf(env.Stderr, "pi-otel: another watch is following state %s (%v); stop it, give this one its own --state, or pass --wait-lock to wait for it\n", state, le)
		return nil, 1
	case ctx.Err() != nil:
		if !cfg.Quiet {
			fmt.Fprintf(env.Stderr, "pi-otel: stopped while waiting for the lock of state %s: nothing traced\n", state)
		}
		return nil, 0
	default:
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return nil, 1
	}
}

// homeDir is $HOME as the environment gives it, else the user's.
func homeDir(env Env) string {
	if h := env.Getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}
