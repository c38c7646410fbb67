package app

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/report"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/telemetry"
)

// Report totals what Pi spent, from its session files, with the pipeline
// watch traces them with: the report's numbers are the traces'.
func Report(ctx context.Context, env Env, args []string) int {
	ctx, stop := env.Signals.stopContext(ctx)
	defer stop()
	defer reportGC(env.Getenv)()
	return reportCommand(ctx, env, args, reportTerm{})
}

// reportGCPercent is the collector's pace while report reads a history:
// its live heap is a few megabytes of open runs, and the default (100)
// collects every few megabytes of short-lived spans and lines, a third
// of report's time. Report ends in seconds, and the soft memory limit
// (memory.go) still bounds the heap.
const reportGCPercent = 400

// reportGC sets reportGCPercent unless GOGC says otherwise, and returns
// what restores the pace before it.
func reportGC(getenv func(string) string) func() {
	if getenv != nil && getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(reportGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// reportTerm is what report knows of the terminal: whether stderr is one
// (for progress), and stdout's width. The zero value asks the process's.
type reportTerm struct {
	progress bool // stderr is a terminal
	width    int  // of stdout; 0 when it is not a terminal
	now      time.Time
	// every is how often progress is drawn, after the first second.
	every time.Duration
}

func reportCommand(ctx context.Context, env Env, args []string, term reportTerm) int {
	fs := flag.NewFlagSet("pi-otel report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	config.RegisterReportFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(env.Stdout, "report", "[flags] [PATH...]", fs)
			return 0
		}
		fmt.Fprintln(env.Stderr, flagError("report", fs, err))
		return 2
	}
	rcfg, err := config.LoadReport(fs, env.Getenv)
	if err != nil {
		sayLines(env.Stderr, "pi-otel report: ", err)
		return 2
	}
	if !rcfg.Quiet {
		for _, w := range rcfg.Warnings {
			fmt.Fprintf(env.Stderr, "pi-otel report: %s\n", w)
		}
	}
	opts, code := reportOptions(env, rcfg, term.now)
	if code >= 0 {
		return code
	}
	paths, code := reportPaths(env, rcfg, fs.Args())
	if code >= 0 {
		return code
	}

	// The rest is read as watch reads it, so that the spans summed are
	// the ones watch would export: pi.team above all (--team,
	// PI_OTEL_TEAM, else OTEL_RESOURCE_ATTRIBUTES), and the attribute
	// limits. Its flags here are only --team and --quiet.
	cfg, err := config.Load(fs, env.Getenv)
	if err != nil {
		sayLines(env.Stderr, "pi-otel report: ", err)
		return 2
	}
	if !rcfg.Quiet {
		for _, w := range cfg.Warnings {
			if !slices.Contains(rcfg.Warnings, w) {
				fmt.Fprintf(env.Stderr, "pi-otel report: %s\n", w)
			}
		}
	}
	col := report.NewCollector(opts)
	cfg.Traces.Exporter, cfg.Metrics.Exporter, cfg.Logs.Exporter = telemetry.ExporterNone, telemetry.ExporterNone, telemetry.ExporterNone
	// Content is never summed; Quiet: the notes are the report's.
	cfg.CaptureContent, cfg.Quiet = false, true
	// watch --since all's pipeline, with nothing exported: the collector
	// takes the spans where the exporter would.
	sp, err := newSessionPipeline(env, cfg, sessionConfig{Telemetry: []telemetry.Option{
		telemetry.WithSpanProcessor(func(metric.MeterProvider) (sdktrace.SpanProcessor, error) { return col, nil }),
		telemetry.WithSampler(col.Sampler),
	}})
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel report: %v\n", err)
		return 1
	}
	// Nothing is exported, so a caller's TRACEPARENT has no trace to join;
	// unsampled, it would leave every run unrecorded and the report empty.
	sp.parent = context.Background()
	var skipped reportSkips
	stopProgress := reportProgress(env, term, sp, col)
	files, runErr := readHistory(ctx, sp, paths, skipped.logf)
	stopProgress()
	if ctx.Err() != nil {
		fmt.Fprintln(env.Stderr, "pi-otel report: interrupted: no report")
		return 1
	}
	if runErr != nil {
		fmt.Fprintf(env.Stderr, "pi-otel report: %v\n", runErr)
		return 1
	}
	t := col.Table()
	switch {
	case rcfg.JSON:
		err = report.WriteJSON(env.Stdout, t)
	case rcfg.CSV:
		err = report.WriteCSV(env.Stdout, t)
	default:
		err = report.WriteTable(env.Stdout, t, cmp.Or(term.width, terminalWidth(env)))
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel report: writing the report: %v\n", err)
		return 1
	}
	if !rcfg.Quiet {
		skipped.say(env.Stderr, files, sp.counts.Damaged.Load(), sp.counts.Repaired.Load(), col.Stats())
	}
	return 0
}

// maxReportLanes bounds the followers readHistory runs at once.
const maxReportLanes = 8

// readHistory reads the history under paths as watch --since all would,
// into sp, with a follower per core: each takes a group of files that
// needs nothing of the others' (sessionwatch.Partition: a session's
// files, a child's with its parent's), so that each group's ledger and
// parents' notes are whole. The last follower to end shuts the pipeline
// down. It returns how many files were found.
func readHistory(ctx context.Context, sp *sessionPipeline, paths []string, logf func(string, ...any)) (int, error) {
	n := min(runtime.GOMAXPROCS(0), maxReportLanes)
	var parts *sessionwatch.Parts
	if n > 1 {
		parts = sessionwatch.Partition(paths, n)
	}
	flush := &lastFlush{left: n, to: sp.flush}
	followers := make([]*sessionwatch.Follower, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		fcfg := sp.followerConfig()
		fcfg.Dirs = paths
		fcfg.Since = sessionwatch.SinceAll
		fcfg.Poll = time.Hour // one scan, no inotify
		fcfg.Logf = logf
		fcfg.Flush = flush.flush
		if n > 1 {
			fcfg.Share = parts.Share(i)
		}
		done, finished := context.WithCancel(ctx)
		fcfg.Ready = finished // the history is read: stop, and close what is open
		// Runs still open (a session being written now) are counted as
		// they stand, as replay counts them; ended by the user, nothing is.
		fcfg.Exited = func() bool { return ctx.Err() == nil }
		followers[i] = sessionwatch.New(fcfg)
		wg.Go(func() {
			defer finished()
			errs[i] = followers[i].Run(done)
		})
	}
	wg.Wait()
	files := 0
	for _, f := range followers {
		files += f.Stats().Files // each file is one share's
	}
	return files, errors.Join(errs...)
}

// lastFlush serializes the followers' flushes of one pipeline; only the
// last follower's final flush is final, and shuts the pipeline down.
type lastFlush struct {
	mu   sync.Mutex
	left int
	to   func(ctx context.Context, final bool) error
}

func (l *lastFlush) flush(ctx context.Context, final bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if final {
		l.left--
		final = l.left == 0
	}
	return l.to(ctx, final)
}

// reportOptions reads the grouping, zone and bounds; a bad one is said
// and its exit code returned.
func reportOptions(env Env, rcfg config.Report, now time.Time) (report.Options, int) {
	if now.IsZero() {
		now = time.Now()
	}
	by, err := report.ParseGrouping(rcfg.By)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel report: --by %q: %v\n", rcfg.By, err)
		return report.Options{}, 2
	}
	loc, err := report.ParseZone(rcfg.TZ)
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel report: --tz %q: %v\n", rcfg.TZ, err)
		return report.Options{}, 2
	}
	opts := report.Options{By: by, Loc: loc}
	for _, b := range []struct {
		name, v string
		dst     *time.Time
		until   bool
	}{{"since", rcfg.Since, &opts.Since, false}, {"until", rcfg.Until, &opts.Until, true}} {
		if *b.dst, err = report.ParseBound(b.v, now, loc, b.until); err != nil {
			fmt.Fprintf(env.Stderr, "pi-otel report: --%s %q: %v\n", b.name, b.v, err)
			return report.Options{}, 2
		}
	}
	if !opts.Since.IsZero() && !opts.Until.IsZero() && !opts.Since.Before(opts.Until) {
		fmt.Fprintf(env.Stderr, "pi-otel report: --since (%s) is not before --until (%s): no run could count\n",
			opts.Since.Format(time.RFC3339), opts.Until.Format(time.RFC3339))
		return report.Options{}, 2
	}
	return opts, -1
}

// reportPaths are the folders and files to read: those given, else Pi's
// session folder, found as watch finds it.
func reportPaths(env Env, rcfg config.Report, args []string) ([]string, int) {
	if len(args) == 0 {
		cwd, _ := os.Getwd()
		roots, err := sessionwatch.PiDirs{Getenv: env.Getenv, Home: homeDir(env), Cwd: cwd}.DefaultRoots()
		if err != nil && !rcfg.Quiet {
			fmt.Fprintf(env.Stderr, "pi-otel report: %v\n", err)
		}
		// Pi's root may not be there; oh-my-pi's, the others, is.
		root := roots[0]
		_, rootErr := os.Stat(root)
		if rootErr != nil {
			roots = roots[1:]
		}
		args = roots
		if len(args) == 0 {
			fmt.Fprintf(env.Stderr, "pi-otel report: no Pi sessions at %s (%v); give the folders or files to read\n", root, bareError(rootErr))
			return nil, 1
		}
	}
	var bad bool
	out := make([]string, 0, len(args))
	for _, p := range args {
		st, err := os.Stat(p)
		switch {
		case err != nil:
			fmt.Fprintf(env.Stderr, "pi-otel report: %s: %v\n", p, bareError(err))
			bad = true
			continue
		case !st.IsDir() && !strings.HasSuffix(p, ".jsonl"):
			fmt.Fprintf(env.Stderr, "pi-otel report: %s is neither a folder nor a Pi session file (*.jsonl)\n", p)
			bad = true
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		out = append(out, p)
	}
	if bad {
		return nil, 2
	}
	return out, -1
}

// bareError is err without the path an *os.PathError repeats.
func bareError(err error) error {
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		return pe.Err
	}
	return err
}

// reportSkips gathers what the follower passed over, said once at the
// end instead of a line each.
type reportSkips struct {
	mu    sync.Mutex
	lines []string
}

func (s *reportSkips) logf(format string, args ...any) {
	l := fmt.Sprintf(format, args...)
	s.mu.Lock()
	defer s.mu.Unlock()
	// Every follower walks the same folders (readHistory): one note each.
	if !slices.Contains(s.lines, l) {
		s.lines = append(s.lines, l)
	}
}

// reportSaid is how many of the follower's lines are said one by one.
const reportSaid = 5

// say writes what was not counted, on stderr.
func (s *reportSkips) say(w io.Writer, files int, damaged, repaired int64, st report.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The followers note side by side: sorted, the same history says the
	// same notes each time.
	slices.Sort(s.lines)
	for i, l := range s.lines {
		if i == reportSaid {
			fmt.Fprintf(w, "pi-otel report: %d more notes like these\n", len(s.lines)-reportSaid)
			break
		}
		fmt.Fprintf(w, "pi-otel report: %s\n", l)
	}
	if damaged > 0 {
		fmt.Fprintf(w, "pi-otel report: %s skipped: not JSON, or not an entry Pi writes\n", plural(damaged, "damaged line"))
	}
	if repaired > 0 {
		fmt.Fprintf(w, "pi-otel report: %s of several entries with no line end between them read as those entries\n", plural(repaired, "line"))
	}
	if st.Loose > 0 {
		fmt.Fprintf(w, "pi-otel report: %s outside any run not counted\n", plural(st.Loose, "model call"))
	}
	if files == 0 {
		fmt.Fprintln(w, "pi-otel report: no session files found")
	}
}

func plural(n int64, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + one + "s"
}

// progressAfter is how long report works in silence before it says how
// far it got.
const progressAfter = time.Second

// reportProgress draws, on a terminal's stderr, how many lines and runs
// have been read, once the report has taken progressAfter; the returned
// function stops it and clears the line.
func reportProgress(env Env, term reportTerm, sp *sessionPipeline, col *report.Collector) func() {
	if !term.progress && !env.stderrTTY { // stderr, before Main wrapped it
		return func() {}
	}
	every := term.every
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(progressAfter)
		defer t.Stop()
		drawn := false
		for {
			select {
			case <-stop:
				if drawn {
					fmt.Fprint(env.Stderr, "\r\x1b[K")
				}
				return
			case <-t.C:
			}
			fmt.Fprintf(env.Stderr, "\r\x1b[Kpi-otel report: %d lines, %d runs read…", sp.counts.Lines.Load(), col.Stats().Runs)
			drawn = true
			t.Reset(every)
		}
	}()
	return func() {
		close(stop)
		wg.Wait()
	}
}
