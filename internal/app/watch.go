package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/mapper/vocab"
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
	var wfs *flag.FlagSet
	cfg, dirs, code := parse(env, "watch", "[flags] [DIR...]", args, func(fs *flag.FlagSet) {
		config.RegisterWatchFlags(fs)
		wfs = fs
	})
	if code >= 0 {
		return code
	}
	wcfg, err := config.LoadWatch(wfs, env.Getenv)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	for _, w := range wcfg.Warnings {
		fmt.Fprintf(env.Stderr, "pi-otel: %s\n", w)
	}
	if bad := notFolders(dirs); len(bad) > 0 {
		// Followed, it would hold nothing, ever: watch would wait on it
		// in silence. A DIR not there yet is fine: it is waited for.
		for _, d := range bad {
			fmt.Fprintf(env.Stderr, "pi-otel watch: %s is not a folder; give the folders Pi writes session files in (pi-otel replay --follow FILE follows one file); see pi-otel watch --help\n", d)
		}
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
	state := wcfg.State
	if state == "" {
		state = sessionwatch.DefaultStatePath(env.Getenv, home)
	}

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
	sp, err := newSessionPipeline(env, cfg, append(cc.option(), telemetry.WithBackpressure(ctx))...)
	if err != nil {
		cc.close()
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	sp.calls = cc
	defer cc.close()

	fcfg := sp.followerConfig(env, cfg)
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

// notFolders are the dirs that exist and are not folders (a symlink is
// judged by what it points to).
func notFolders(dirs []string) []string {
	var bad []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && !fi.IsDir() {
			bad = append(bad, d)
		}
	}
	return bad
}

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

// sessionPipeline is the telemetry of the commands that trace session
// files: deterministic ids from internal/session, the span metrics and the
// health metrics, and a gate that tells the follower whether the exporter
// took every span.
type sessionPipeline struct {
	tel *telemetry.Pipeline
	// parents finds the tool spans that ran child sessions, noted as
	// their parents are traced.
	parents *session.ParentTools
	cfg     config.Config
	stderr  io.Writer
	// exitOut gets the line about a slow final flush (stderr if nil): the
	// terminal itself under the TUI, whose other lines are held until the
	// end.
	exitOut io.Writer
	content agentmap.Content
	parent  context.Context
	// exit, if set, says how the program that wrote the files ended, for
	// the runs still open when it exited (sessionwatch.Config.Exited).
	exit func() agentmap.Ending

	// counts are every file's lines, those that did not decode, and
	// those that held several entries, for the health metrics: the
	// FileMappers add to them as they read.
	counts session.Counts
	// bad is Failed+Dropped at the last flush: more means some spans of
	// the runs since were lost.
	bad int64
	// badLogs is the same for log records; their loss is said, not
	// retried (see flush).
	badLogs  int64
	saidLogs bool
	stopped  bool
	// signals end the final flush early (see flush).
	signals *Signals
	// calls, if set, hands the bash calls of the Pi under run its own
	// trace context.
	calls *callContexts
}

func newSessionPipeline(env Env, cfg config.Config, opts ...telemetry.Option) (*sessionPipeline, error) {
	content, err := newContent(cfg)
	if err != nil {
		return nil, err
	}
	sp := &sessionPipeline{parents: session.NewParentTools(parentFileMax), cfg: cfg, stderr: env.Stderr, content: content, parent: callerContext(env),
		signals: env.Signals}
	// Trace and span ids derive from the session and entry ids (package
	// spanid), so a run traced again (after a failed export) keeps its ids.
	tel, _, err := newTelemetry(env, cfg, func() recordCounts {
		return recordCounts{sp.counts.Lines.Load(), sp.counts.Damaged.Load(), sp.counts.Repaired.Load()}
	}, opts...)
	if err != nil {
		return nil, err
	}
	sp.tel = tel
	return sp, nil
}

// followerConfig is the part of a follower's configuration that wires it
// to this pipeline.
func (sp *sessionPipeline) followerConfig(env Env, cfg config.Config) sessionwatch.Config {
	fc := sessionwatch.Config{
		NewTracer: sp.newTracer,
		IsSession: session.Starts,
		Flush:     sp.flush,
	}
	if !cfg.Quiet {
		fc.Logf = func(format string, args ...any) {
			fmt.Fprintf(env.Stderr, "pi-otel: "+format+"\n", args...)
		}
	}
	return fc
}

func (sp *sessionPipeline) newTracer(spec sessionwatch.TracerSpec) sessionwatch.Tracer {
	c := &fileTracer{sp: sp, calls: sp.calls.sessionCalls(spec.Path)}
	cfg := session.Config{
		TracerProvider: sp.tel.TracerProvider(),
		Parent:         sp.parent,
		Content:        sp.content,
		SkipThrough:    spec.SkipThrough,
		Claims:         spec.Claims,
		ChildSessions:  nested.ReadSessionFile(nested.DefaultLimits.MaxBytes),
		Path:           spec.Path,
		// One process follows both: a child session is traced nested in
		// its parent's trace, not again on its own.
		ParentTools: sp.parents,
		NestedOnce:  true,
		Counts:      &sp.counts,
	}
	if c.calls != nil {
		cfg.BashCalls = c.calls.calls
	}
	c.FileMapper = session.New(cfg)
	if c.calls != nil {
		c.calls.fm = c.FileMapper
	}
	return c
}

// fileTracer is one file's FileMapper as the follower drives it: it
// tells the bash calls' publisher how far the file is read, and closes
// open runs as the program that wrote the file ended.
type fileTracer struct {
	*session.FileMapper
	sp *sessionPipeline
	// calls publishes the file's bash calls, with propagation.
	calls *sessionCalls
}

func (c *fileTracer) Line(off int64, b []byte) {
	c.FileMapper.Line(off, b)
	c.calls.caughtUp(off + int64(len(b)) + 1)
}

// Predecode is the FileMapper's, followed by caughtUp as Line is.
func (c *fileTracer) Predecode() func(off int64, b []byte) func() {
	decode := c.FileMapper.Predecode()
	return func(off int64, b []byte) func() {
		rest := decode(off, b)
		end := off + int64(len(b)) + 1
		return func() {
			rest()
			c.calls.caughtUp(end)
		}
	}
}

// Close closes the file's open run: ended as the program that wrote it
// ended when it exited, else at the end of the input.
func (c *fileTracer) Close(exited bool) {
	end := agentmap.Ending{Reason: vocab.EndEOF}
	if exited && c.sp.exit != nil {
		end = c.sp.exit()
	}
	c.FileMapper.Close(end)
}

// flush exports what is queued and reports whether every span ended so
// far reached the exporter, or the spool, which counts as delivered: its
// spans are sent later and must not be traced again. Log records are not
// part of that answer: they repeat the spans' events, and tracing a run
// again to send its records again would send its spans twice. Records the
// exporter could not deliver after its retries are counted (the summary
// line) and said once, and the state moves on. The final flush shuts the
// pipeline down.
func (sp *sessionPipeline) flush(ctx context.Context, final bool) error {
	var err error
	if final {
		if !sp.stopped {
			sp.stopped = true
			out := sp.exitOut
			if out == nil {
				out = sp.stderr
			}
			stop := exitNotice(out, sp.cfg, sp.tel)
			// A signal while it waits ends the wait, as the notice says,
			// not pi-otel: the summary still comes. The signal that ended
			// watch came before, and is not one.
			fctx, cancel := sp.signals.stopContext(context.Background())
			err = sp.tel.Shutdown(fctx) // bounded by --flush-timeout
			cancel()
			stop()
		}
	} else {
		// Only the spans and the logs: metrics keep their own interval.
		err = sp.tel.FlushSpans(ctx)
		if ctx.Err() != nil {
			// Stopping: the follower leaves the decision to the final
			// flush, which must still see what was lost since the last.
			return ctx.Err()
		}
		if err == nil {
			// Records that failed are counted below, not an error.
			if lerr := sp.tel.FlushLogs(ctx); lerr != nil && ctx.Err() != nil {
				err = lerr
			}
		}
	}
	s := sp.tel.Stats()
	bad := s.Failed + s.Dropped
	lost := bad - sp.bad
	sp.bad = bad
	// After a flush every record emitted is exported, failed or dropped.
	ls := sp.tel.LogStats()
	badLogs := ls.Emitted - ls.Exported
	lostLogs := badLogs - sp.badLogs
	sp.badLogs = badLogs
	if lostLogs > 0 && !sp.saidLogs && !sp.cfg.Quiet {
		sp.saidLogs = true
		fmt.Fprintf(sp.stderr, "pi-otel: %d log records were not exported; their runs are not traced again (their spans were delivered): the summary counts every record lost\n", lostLogs)
	}
	switch {
	case err != nil && !(final && lost == 0 && s.Pending() == 0):
		// The last flush ran out of --flush-timeout (a collector down)
		// yet every span was exported or spooled: that is a delivery, or
		// the next start would trace the runs again beside the spool.
		return err
	case lost > 0:
		return fmt.Errorf("%d spans were not exported", lost)
	case s.Pending() > 0 && sp.cfg.Traces.Exporter != telemetry.ExporterNone: // none exports nothing, loses nothing
		return errors.New("spans are still waiting for the exporter")
	}
	return nil
}

// summary prints the one exit line; watch adds how many files it
// followed.
func (sp *sessionPipeline) summary(st *sessionwatch.Stats) {
	if !sp.stopped {
		_ = sp.flush(context.Background(), true)
	}
	if sp.cfg.Quiet {
		return
	}
	line := sp.tel.Summary()
	if st != nil {
		line += fmt.Sprintf(" (%s)", st)
	}
	fmt.Fprintln(sp.stderr, line)
}
