package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/ledger"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// The session pipeline is the one path of every command that traces
// session files (replay FILE, watch, report, the TUI under run): a
// FileMapper per file, sharing the parents' tool spans, the content
// rules, the caller's context and the line counts, over one telemetry
// pipeline whose flush tells a follower whether the exporter took every
// span. It stays in package app: what it owns besides the FileMappers
// (the telemetry newTelemetry sets up, the bash calls' contexts, the exit
// notice and the signals that cut the last flush short) is app's.

// sessionConfig is what a command sets of its session pipeline; a zero
// field takes the default.
type sessionConfig struct {
	// Telemetry are options after the defaults (backpressure, where the
	// spans go, attributes only a live run knows).
	Telemetry []telemetry.Option
	// Calls, if set, hands the bash calls of the files read their own
	// trace context (pi-otel watch, the TUI under run).
	Calls *callContexts
	// OneFile: one file is traced on its own (replay), so a child
	// session's runs are traced from its file too, not only nested in its
	// parent's trace by a follower that reads both.
	OneFile bool
	// TooLong, if set, counts the lines the reader skipped for their
	// length, which the health metrics count as read and damaged.
	TooLong func() int64
	// Exit, if set, says how the program that wrote the files ended, for
	// the runs still open when it exited (sessionwatch.Config.Exited).
	Exit func() agentmap.Ending
	// ExitOut gets the line about a slow final flush (default stderr): the
	// terminal itself under the TUI, whose other lines are held until the
	// end.
	ExitOut io.Writer
	// ParentFileMax bounds the parent's file read to link a child session
	// to the tool that ran it (default 1 GiB).
	ParentFileMax int64
}

// Validate reports a sessionConfig the pipeline cannot be built with.
func (c sessionConfig) Validate() error {
	switch {
	case c.ParentFileMax < 0:
		return fmt.Errorf("session pipeline: parent file bound %d is below zero", c.ParentFileMax)
	case c.OneFile && c.Exit != nil:
		// A replayed file's reader ends with the file, never with Pi.
		return errors.New("session pipeline: Exit is for followed files, not for one replayed file")
	}
	return nil
}

// parentFileMax bounds the parent session file read to link a child
// session to the tool that ran it.
const parentFileMax int64 = 1 << 30

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
	scfg    sessionConfig
	content agentmap.Content
	parent  context.Context
	// children reads the child session files tool results name.
	children nested.SessionReader

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
}

// newSessionPipeline builds the session pipeline of a command.
func newSessionPipeline(env Env, cfg config.Config, scfg sessionConfig) (*sessionPipeline, error) {
	if err := scfg.Validate(); err != nil {
		return nil, err
	}
	scfg.ParentFileMax = cmp.Or(scfg.ParentFileMax, parentFileMax)
	if scfg.ExitOut == nil {
		scfg.ExitOut = env.Stderr
	}
	content, err := newContent(cfg)
	if err != nil {
		return nil, err
	}
	sp := &sessionPipeline{parents: session.NewParentTools(scfg.ParentFileMax), cfg: cfg, scfg: scfg, stderr: env.Stderr,
		content: content, parent: callerContext(env), children: nested.ReadSessionFile(nested.DefaultLimits.MaxBytes), signals: env.Signals}
	// Trace and span ids derive from the session and entry ids (package
	// spanid), so a run traced again (after a failed export) keeps its ids.
	tel, _, err := newTelemetry(env, cfg, func() recordCounts {
		long := int64(0)
		if scfg.TooLong != nil {
			long = scfg.TooLong()
		}
		c := &sp.counts
		return recordCounts{c.Lines.Load() + long, c.Damaged.Load() + long, c.Repaired.Load()}
	}, slices.Concat(scfg.Telemetry, scfg.Calls.option())...)
	if err != nil {
		return nil, err
	}
	sp.tel = tel
	return sp, nil
}

// followerConfig is the part of a follower's configuration that wires it
// to this pipeline.
func (sp *sessionPipeline) followerConfig() sessionwatch.Config {
	// Each follower has a ledger of its own: report's followers read
	// groups of files that share no session, side by side.
	lg := ledger.New()
	fc := sessionwatch.Config{
		NewTracer: func(spec sessionwatch.TracerSpec) sessionwatch.Tracer {
			return sp.file(spec, lg)
		},
		IsSession:   session.Starts,
		Flush:       sp.flush,
		Ledger:      lg,
		ParentTools: sp.parents,
	}
	if !sp.cfg.Quiet {
		fc.Logf = func(format string, args ...any) {
			fmt.Fprintf(sp.stderr, "pi-otel: "+format+"\n", args...)
		}
	}
	return fc
}

// file builds the tracer of one file; spec.Path is "" for stdin (relative
// child files then resolve against Pi's cwd). A follower's tracers claim
// the runs they trace in its ledger; with none (replay), every run is
// traced.
func (sp *sessionPipeline) file(spec sessionwatch.TracerSpec, lg *ledger.Ledger) *fileTracer {
	c := &fileTracer{sp: sp, calls: sp.scfg.Calls.sessionCalls(spec.Path), ledger: lg, skip: spec.SkipThrough}
	cfg := session.Config{
		TracerProvider: sp.tel.TracerProvider(),
		Parent:         sp.parent,
		Content:        sp.content,
		// A parent's file nests its children's files; a child's file
		// links to the parent's tool.
		ChildSessions: sp.children,
		Path:          spec.Path,
		ParentTools:   sp.parents,
		// A follower reads both: a child session is traced nested in its
		// parent's trace, not again on its own.
		NestedOnce: !sp.scfg.OneFile,
		Counts:     &sp.counts,
	}
	if c.calls != nil {
		cfg.BashCalls = c.calls.calls
	}
	cfg.Runs = c.run
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
	// ledger records the runs traced (nil: trace every run); skip is the
	// place an older pi-otel's state left, before which every run was
	// traced (sessionwatch.TracerSpec).
	ledger *ledger.Ledger
	skip   int64
}

// run traces a run the file completed if it is the first to claim it:
// each run once, whichever file holds it.
func (c *fileTracer) run(r *session.Run) {
	switch {
	case r.Off < c.skip:
		// By where it begins, not ends: a run traced by Idle may gain
		// entries (a compaction Pi writes later) that a re-read groups
		// into it.
		if c.ledger != nil {
			c.ledger.Traced(r.Session, r.Key, r.Start)
		}
	case c.ledger == nil:
		r.Trace(false)
	default:
		if trace, count := c.ledger.Claim(r.Session, r.Key, r.Start); trace {
			r.Trace(!count)
		}
	}
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
	if exited && c.sp.scfg.Exit != nil {
		end = c.sp.scfg.Exit()
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
			stop := exitNotice(sp.scfg.ExitOut, sp.cfg, sp.tel)
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

// finish is replay's end: the last flush, within --flush-timeout (a
// signal ends the wait, not pi-otel), and the summary line.
func (sp *sessionPipeline) finish() {
	sigs, unsubscribe := sp.signals.Subscribe()
	defer unsubscribe()
	sp.stopped = true
	defer shutdownAtExit(sigs, sp.tel, sp.cfg, sp.stderr)()
	if !sp.cfg.Quiet {
		fmt.Fprintln(sp.stderr, sp.tel.Summary())
	}
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
