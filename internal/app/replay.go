package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/config"
	"github.com/pi-otel/pi-otel/internal/readahead"
	"github.com/pi-otel/pi-otel/internal/session"
	"github.com/pi-otel/pi-otel/internal/sessionwatch"
	"github.com/pi-otel/pi-otel/internal/stream/follow"
	"github.com/pi-otel/pi-otel/internal/stream/framing"
	"github.com/pi-otel/pi-otel/internal/stream/ingest"
	"github.com/pi-otel/pi-otel/internal/telemetry"
	"github.com/pi-otel/pi-otel/mapper/vocab"
)

// Replay traces a Pi session file or a captured JSONL stream, from a file
// or stdin; it tells which by the content. It stops at a signal, or when
// ctx ends, and flushes what it traced.
func Replay(ctx context.Context, env Env, args []string) int {
	ctx, stop := env.Signals.stopContext(ctx)
	defer stop()
	return replayCommand(ctx, env, args)
}

// replayCommand is Replay until ctx ends.
func replayCommand(ctx context.Context, env Env, args []string) int {
	cfg, fs, code := parse(env, "replay", "[flags] FILE|-", args, config.RegisterReplayFlags)
	if code >= 0 {
		return code
	}
	rcfg, err := config.LoadReplay(fs, env.Getenv)
	if err != nil {
		sayLines(env.Stderr, "pi-otel: ", err)
		return 2
	}
	if !cfg.Quiet {
		for _, w := range rcfg.Warnings {
			fmt.Fprintf(env.Stderr, "pi-otel: %s\n", w)
		}
	}
	rest := fs.Args()
	if len(rest) != 1 {
		fmt.Fprintln(env.Stderr, "pi-otel replay: want one FILE, or - for stdin; see pi-otel replay --help")
		return 2
	}

	var src io.Reader
	switch {
	case rest[0] == "-":
		// A quiet pipe's read would hold off a signal; files are closed
		// by follow.OpenFile at one instead.
		src = interruptible(ctx, env.Stdin)
	case rcfg.Follow:
		// Like tail -F: a file not there yet is waited for, and said so
		// at once, so a typo in the name does not look like a quiet file.
		if _, err := os.Stat(rest[0]); os.IsNotExist(err) && !cfg.Quiet {
			fmt.Fprintf(env.Stderr, "pi-otel: %s does not exist yet; waiting for it to appear (Ctrl-C to stop)\n", rest[0])
		}
		f, err := follow.Open(ctx, rest[0], follow.WithPoll(rcfg.Poll))
		if err != nil {
			return openFailed(ctx, env, rest[0], err)
		}
		defer f.Close()
		src = f
	default:
		// A FIFO waits for its writer here; a signal still ends the wait.
		f, err := follow.OpenFile(ctx, rest[0])
		if err != nil {
			return openFailed(ctx, env, rest[0], err)
		}
		defer f.Close()
		src = f
	}

	return replay(ctx, env, cfg, src, rest[0], rcfg)
}

// openFailed reports an input that could not be opened; a signal that
// ended the wait for it (a FIFO's writer) is an interrupt, not an error.
func openFailed(ctx context.Context, env Env, name string, err error) int {
	if ctx.Err() != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: interrupted before %s had any records: nothing traced\n", name)
	} else {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
	}
	return 1
}

// replay traces src: a Pi session file, or a captured event stream. With
// rcfg.Follow src is followed: a session file's quiet run is then traced
// without waiting for the next prompt.
func replay(ctx context.Context, env Env, cfg config.Config, src io.Reader, name string, rcfg config.Replay) int {
	r := &lineReader{ctx: ctx, r: framing.NewReader(src, framing.WithMaxRecord(rcfg.MaxLine)), name: name, quiet: cfg.Quiet, stderr: env.Stderr}
	head, kind, herr := sniff(r)
	switch kind {
	case session.KindSession:
		return replaySession(ctx, env, cfg, r, head, herr, name, rcfg.Follow)
	case session.KindUnknown:
		switch {
		case len(head) == 0 && ctx.Err() != nil:
			// Interrupted while waiting (--follow, a FIFO, a quiet pipe)
			// or reading (a line with no end): nothing came. The read
			// error, if any, is the input closed at the signal.
			fmt.Fprintf(env.Stderr, "pi-otel: interrupted before %s had any records: nothing traced\n", name)
			return 1
		case ctx.Err() != nil:
			fmt.Fprintf(env.Stderr, "pi-otel: interrupted before %s's first %d lines told what it is: nothing traced\n", name, len(head))
			return 1
		}
		if herr != nil && herr != io.EOF {
			fmt.Fprintf(env.Stderr, "pi-otel: reading %s: %v\n", name, herr)
			return 1
		}
		fmt.Fprintf(env.Stderr, "pi-otel: %s is neither a Pi session file nor a Pi event stream: expected JSON lines starting with {\"type\":\"session\",...} or Pi's json/rpc-mode records\n", name)
		return 1
	}
	return replayStream(ctx, env, cfg, records(r, head, herr), name, r)
}

// lineReader reads src's lines, skipping, counting and saying the ones
// over --max-line-size: they are damaged input, not the end of it. Once
// ctx is done it hands out no more: the line read then is the one cut
// short by the input closed at the signal, and decoding it (a long line
// takes a second) would only find it damaged.
type lineReader struct {
	ctx    context.Context
	r      *framing.Reader
	name   string
	quiet  bool
	stderr io.Writer
	// tooLong counts the lines skipped, read by the health metrics.
	tooLong atomic.Int64
}

// tooLongSaid is how many skipped lines are named one by one; the exit
// lines give the count of all of them.
const tooLongSaid = 5

func (l *lineReader) Next() ([]byte, error) {
	for {
		rec, err := l.r.Next()
		if cerr := l.ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if err == nil {
			// Most lines: no error to look into, which would cost an
			// allocation each (tl escapes through errors.As).
			return rec, nil
		}
		var tl *framing.TooLongError
		if !errors.As(err, &tl) {
			return rec, err
		}
		if n := l.tooLong.Add(1); n <= tooLongSaid && !l.quiet {
			more := ""
			if n == tooLongSaid {
				more = "; more are counted, not named"
			}
			fmt.Fprintf(l.stderr, "pi-otel: %s: line %d is longer than %s (--max-line-size): skipped, counted as damaged%s\n", l.name, tl.Line, sizeText(int64(tl.Max)), more)
		}
	}
}

// sizeText says a byte count in the largest binary unit that divides it,
// as --max-line-size takes it.
func sizeText(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + " " + u.name
		}
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// interruptible reads r on a goroutine of its own, so that once ctx is
// done Read returns at once, even while r's read waits on a quiet pipe.
// The goroutine's last read is left behind: replay is about to exit.
func interruptible(ctx context.Context, r io.Reader) io.Reader {
	c := &ctxReader{ctx: ctx, full: make(chan chunk), free: make(chan []byte, 2)}
	for range cap(c.free) {
		c.free <- make([]byte, 64<<10)
	}
	go c.loop(r)
	return c
}

type chunk struct {
	b   []byte
	err error
}

// ctxReader hands over what its goroutine read, in buffers of its own:
// one being read into while the other is copied out.
type ctxReader struct {
	ctx  context.Context
	full chan chunk
	free chan []byte
	cur  chunk // being copied out
	buf  []byte
}

func (c *ctxReader) loop(r io.Reader) {
	for {
		var b []byte
		select {
		case b = <-c.free:
		case <-c.ctx.Done():
			return
		}
		n, err := r.Read(b)
		select {
		case c.full <- chunk{b[:max(n, 0)], err}:
		case <-c.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(c.cur.b) == 0 && c.cur.err == nil {
		if c.buf != nil {
			c.free <- c.buf[:cap(c.buf)]
			c.buf = nil
		}
		select {
		case c.cur = <-c.full:
			c.buf = c.cur.b
		case <-c.ctx.Done():
			return 0, c.ctx.Err()
		}
	}
	if len(c.cur.b) > 0 {
		n := copy(p, c.cur.b)
		c.cur.b = c.cur.b[n:]
		return n, nil
	}
	return 0, c.cur.err
}

// sniffLines and sniffBytes bound what is held to decide what a file is:
// records can be huge.
const (
	sniffLines = 64
	sniffBytes = 4 << 20
)

// record is a line of the input, and the offset its line begins at.
type record struct {
	off int64
	b   []byte
}

// sniff reads the first records until they tell what src is.
func sniff(r *lineReader) (head []record, kind session.Kind, err error) {
	var joined []byte
	for len(head) < sniffLines && len(joined) < sniffBytes {
		rec, err := r.Next()
		if err != nil {
			return head, session.Classify(joined), err
		}
		head = append(head, record{r.r.Offset(), bytes.Clone(rec)})
		joined = append(append(joined, rec...), '\n')
		// A header alone does not decide: oh-my-pi's stream has a record
		// of neither kind after it.
		if k, sure := session.ClassifyHead(joined); sure {
			return head, k, nil
		}
	}
	return head, session.Classify(joined), nil
}

// records yields the sniffed head, then the rest of r; err is a read
// error met while sniffing.
func records(r *lineReader, head []record, err error) func() (record, error) {
	return func() (record, error) {
		if len(head) > 0 {
			rec := head[0]
			head = head[1:]
			return rec, nil
		}
		if err != nil {
			return record{}, err
		}
		b, err := r.Next()
		return record{r.r.Offset(), b}, err
	}
}

// followSettle is how long a followed session file must be quiet after a
// final answer before its run is traced (the next prompt traces it sooner).
const followSettle = 30 * time.Second

// replaySession traces a session file through the session pipeline.
func replaySession(ctx context.Context, env Env, cfg config.Config, r *lineReader, head []record, herr error, name string, follow bool) int {
	// Ids derive from the runs' keys (package spanid); and no live Pi to
	// protect, so no drops either.
	sp, err := newSessionPipeline(env, cfg, sessionConfig{
		Telemetry: []telemetry.Option{telemetry.WithBackpressure(ctx), consoleToStdout(env)},
		OneFile:   true,
		TooLong:   r.tooLong.Load,
	})
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	path := name
	if name == "-" {
		path = "" // stdin: relative child files resolve against Pi's cwd
	}
	ft := sp.file(sessionwatch.TracerSpec{Path: path}, nil)
	tr := ft.FileMapper
	// Each line at its offset in the file, as watch reads it: version 1
	// entries take their ids from it.
	next := records(r, head, herr)
	var rerr error
	if !follow {
		// Decoding on a goroutine of its own, ahead of the mapping.
		decode := ft.Predecode()
		readahead.Run(func(emit func(func(), int)) {
			rerr = each(next, func(rec record) {
				emit(decode(rec.off, rec.b), len(rec.b)+1)
			})
		}, func(int) {})
	} else {
		rerr = followSession(tr, next, func(rec record) { ft.Line(rec.off, rec.b) })
	}
	ft.Close(false)
	st := tr.Stats()
	if long := r.tooLong.Load(); (st.Damaged > 0 || st.Unknown > 0 || long > 0) && !cfg.Quiet {
		over := ""
		if long > 0 {
			over = fmt.Sprintf(" (%d of them over --max-line-size)", long)
		}
		fmt.Fprintf(env.Stderr, "pi-otel: %s: %d damaged lines skipped%s, %d entries of unknown types kept as events\n", name, st.Damaged+long, over, st.Unknown)
	}
	if st.Repaired > 0 && !cfg.Quiet {
		fmt.Fprintf(env.Stderr, "pi-otel: %s: %s of several entries with no line end between them read as those entries\n", name, plural(st.Repaired, "line"))
	}
	if st.Runs == 0 && st.Skipped == 0 && !cfg.Quiet {
		fmt.Fprintf(env.Stderr, "pi-otel: %s: a Pi session file with no prompt in it: nothing to trace\n", name)
	}
	failed := readFailed(ctx, env, name, rerr)
	sp.finish()
	return failed
}

// followSession feeds a followed file's lines from a reader goroutine, so
// that a quiet run can be traced while the read blocks.
func followSession(tr *session.FileMapper, next func() (record, error), feed func(record)) error {
	ch := make(chan record, 64)
	var rerr error
	go func() {
		defer close(ch)
		rerr = each(next, func(rec record) { ch <- record{rec.off, bytes.Clone(rec.b)} })
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case rec, ok := <-ch:
			if !ok {
				return rerr // written before close(ch)
			}
			feed(rec)
			last = time.Now()
		case now := <-tick.C:
			// Only once the follower has caught up and the file is quiet:
			// while it reads, the next line may still belong to the run.
			if now.Sub(last) >= time.Second {
				tr.Idle(now, followSettle)
			}
		}
	}
}

// replayStream traces the records of a Pi event stream, placing spans by
// the stream's own times.
func replayStream(ctx context.Context, env Env, cfg config.Config, next func() (record, error), name string, r *lineReader) int {
	clock := ingest.NewStreamClock(time.Now())
	// No live Pi to protect: a full export queue waits, never drops.
	p, err := newPipeline(env, cfg, clock, nil, telemetry.WithBackpressure(ctx), consoleToStdout(env))
	if err != nil {
		fmt.Fprintf(env.Stderr, "pi-otel: %v\n", err)
		return 2
	}
	p.tooLong = r.tooLong.Load
	p.countRecordsWith(func() recordCounts {
		s, long := p.sink.Stats(), r.tooLong.Load()
		return recordCounts{s.Records + long, s.Malformed + long, s.Repaired}
	})
	in := ingest.NewAnchored(p.sink, clock) // placed by the stream's start
	rerr := each(next, func(rec record) { in.Record(rec.b) })
	in.Flush()
	failed := readFailed(ctx, env, name, rerr)
	p.finish(agentmap.Ending{Reason: vocab.EndEOF}, clock.Now())
	return failed
}

// each hands every record of next to f, and returns the read error that
// ended them, unless it was the end of the input.
func each(next func() (record, error), f func(rec record)) error {
	for {
		rec, err := next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		f(rec)
	}
}

// readFailed reports a read error that was not an interrupt, and gives
// replay's exit code: 1 after one, else 0.
func readFailed(ctx context.Context, env Env, name string, rerr error) int {
	if rerr == nil || ctx.Err() != nil {
		return 0
	}
	fmt.Fprintf(env.Stderr, "pi-otel: reading %s: %v\n", name, rerr)
	return 1
}
