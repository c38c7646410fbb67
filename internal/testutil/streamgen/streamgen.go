// Package streamgen generates synthetic Pi 1.6.0 JSON-mode streams of any
// size for benchmarks.
//
// The records have the shapes the captures in testdata/captures/pi-1.6.0
// show, and the mix a long coding session has: mostly message_update text
// and thinking deltas (each with Pi's top-level usage object), tool runs
// whose output is usually small and now and then several megabytes, and the
// occasional retry and compaction. Every prompt is a complete lifecycle,
// agent_start … agent_settled, so the mapper sees a valid stream.
//
// The output is deterministic for a given seed.
package streamgen

import (
	"bufio"
	"io"
	"maps"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/pi-otel/pi-otel/internal/option"
)

type config struct {
	seed           uint64
	bigEvery       int
	bigMin, bigMax int
	start          time.Time
	retryEvery     int
	compactEvery   int
}

// Option configures a [Generator].
type Option = option.Option[config]

// WithSeed sets the random seed (default 1).
func WithSeed(seed uint64) Option {
	return option.Func[config](func(c *config) { c.seed = seed })
}

// WithBigOutputs makes about one tool run in every print between minBytes
// and maxBytes (default: one in 200, 1–8 MB). every ≤ 0 turns big outputs
// off.
func WithBigOutputs(every, minBytes, maxBytes int) Option {
	return option.Func[config](func(c *config) {
		c.bigEvery, c.bigMin, c.bigMax = every, max(1, minBytes), max(1, minBytes, maxBytes)
	})
}

// WithRetries makes about one prompt in every hit a provider overload and
// retry (default 60; ≤ 0: never).
func WithRetries(every int) Option {
	return option.Func[config](func(c *config) { c.retryEvery = every })
}

// WithCompactions makes about one prompt in every end with a threshold
// compaction (default 40; ≤ 0: never).
func WithCompactions(every int) Option {
	return option.Func[config](func(c *config) { c.compactEvery = every })
}

// Stats describes what a Generator produced.
type Stats struct {
	Records       int64
	Bytes         int64 // including the LFs
	Prompts       int64 // agent_start … agent_settled cycles
	LargestRecord int   // without its LF
	// Types counts records by type; message_update is split by its
	// assistantMessageEvent type, as "message_update/text_delta".
	Types map[string]TypeStats
}

// TypeStats counts the records of one type.
type TypeStats struct {
	Records, Bytes int64
}

// Generator writes Pi records. It is not safe for concurrent use.
type Generator struct {
	cfg config
	r   *rand.Rand
	out *outputBlock

	now     int64 // the stream's clock, epoch ms
	started bool
	seq     int
	stats   Stats

	// Per prompt scratch: the messages of the current agent run, as JSON,
	// for turn_end and agent_end.
	arena   []byte
	runMsgs [][2]int // spans of arena
	usage   usage
	usageJS []byte
	text    []byte // the escaped text of the block being streamed
}

// New returns a Generator.
func New(opts ...Option) *Generator {
	c := option.Apply(config{
		seed: 1, bigEvery: 200, bigMin: 1 << 20, bigMax: 8 << 20,
		start:      time.Date(2026, 11, 29, 21, 44, 14, 666e6, time.UTC),
		retryEvery: 60, compactEvery: 40,
	}, opts)
	r := rand.New(rand.NewPCG(c.seed, c.seed^0x9e3779b97f4a7c15))
	return &Generator{cfg: c, r: r, out: newOutputBlock(r), now: c.start.UnixMilli(), stats: Stats{Types: map[string]TypeStats{}}}
}

// Stats returns what the Generator has produced so far.
func (g *Generator) Stats() Stats {
	s := g.stats
	s.Types = maps.Clone(g.stats.Types)
	return s
}

// Write writes whole prompts to w until at least size bytes are out, so
// the stream always ends with agent_settled.
func Write(w io.Writer, size int64, opts ...Option) (Stats, error) {
	g := New(opts...)
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf []byte
	for g.stats.Bytes < size {
		buf = g.AppendPrompt(buf[:0])
		if _, err := bw.Write(buf); err != nil {
			return g.Stats(), err
		}
		if cap(buf) > 64<<20 {
			buf = nil // do not keep a huge prompt's buffer
		}
	}
	return g.Stats(), bw.Flush()
}

// end closes the record that starts at dst[start:] and counts it.
func (g *Generator) end(dst []byte, start int, kind string) []byte {
	n := len(dst) - start
	dst = append(dst, '\n')
	g.stats.Records++
	g.stats.Bytes += int64(n + 1)
	g.stats.LargestRecord = max(g.stats.LargestRecord, n)
	t := g.stats.Types[kind]
	t.Records++
	t.Bytes += int64(n + 1)
	g.stats.Types[kind] = t
	return dst
}

// simple appends a record with only a type, such as {"type":"turn_start"}.
func (g *Generator) simple(dst []byte, typ string) []byte {
	start := len(dst)
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `"}`...)
	return g.end(dst, start, typ)
}

func (g *Generator) tick(maxMs int) { g.now += 1 + int64(g.r.IntN(maxMs)) }

func (g *Generator) id(prefix string) string {
	g.seq++
	return prefix + strconv.FormatUint(uint64(g.seq)*0x9e3779b1+0x1000000, 36)
}

// AppendPrompt appends one prompt's records: the session header first if
// this is the first prompt, then agent_start … agent_settled, with a retry
// or a compaction now and then.
func (g *Generator) AppendPrompt(dst []byte) []byte {
	first := !g.started
	if first {
		g.started = true
		dst = g.session(dst)
	}
	g.stats.Prompts++
	g.arena, g.runMsgs = g.arena[:0], g.runMsgs[:0]

	dst = g.simple(dst, "agent_start")
	dst = g.simple(dst, "turn_start")
	if first {
		dst = g.systemMessage(dst)
	}
	dst = g.userMessage(dst)

	retried := false
	if g.cfg.retryEvery > 0 && g.r.IntN(g.cfg.retryEvery) == 0 {
		// The provider is overloaded: the run ends in error and Pi retries
		// it in a new agent run.
		dst = g.failedAttempt(dst)
		retried = true
		g.arena, g.runMsgs = g.arena[:0], g.runMsgs[:0]
		dst = g.simple(dst, "agent_start")
		dst = g.simple(dst, "turn_start")
	}
	for turn := 0; ; turn++ {
		calls := 0
		if turn < 7 && g.r.IntN(100) < 55 {
			calls = 1
			if g.r.IntN(5) == 0 {
				calls = 2 + g.r.IntN(2)
			}
		}
		var msg [2]int
		var tcs []toolCall
		dst, msg, tcs = g.assistantMessage(dst, calls, "stop")
		if retried {
			retried = false
			start := len(dst)
			dst = append(dst, `{"type":"auto_retry_end","success":true,"attempt":1}`...)
			dst = g.end(dst, start, "auto_retry_end")
		}
		var results [][2]int
		if calls > 0 {
			dst, results = g.tools(dst, tcs)
		}
		dst = g.turnEnd(dst, msg, results)
		if calls == 0 {
			break
		}
		dst = g.simple(dst, "turn_start")
	}
	dst = g.agentEnd(dst, false)
	if g.cfg.compactEvery > 0 && g.r.IntN(g.cfg.compactEvery) == 0 {
		dst = g.compaction(dst)
	}
	start := len(dst)
	dst = append(dst, `{"type":"agent_settled","aborted":false}`...)
	return g.end(dst, start, "agent_settled")
}

func (g *Generator) session(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, `{"type":"session","version":3`...)
	u := g.r.Uint64()
	v := g.r.Uint64()
	hex := func(b []byte, x uint64, n int) []byte {
		for i := n - 1; i >= 0; i-- {
			b = append(b, hexDigits[(x>>(4*uint(i)))&0xF])
		}
		return b
	}
	dst = append(dst, `,"id":"`...)
	dst = hex(dst, u>>32, 8)
	dst = append(dst, '-')
	dst = hex(dst, u>>16, 4)
	dst = append(dst, '-')
	dst = hex(dst, u, 4)
	dst = append(dst, '-')
	dst = hex(dst, v>>48, 4)
	dst = append(dst, '-')
	dst = hex(dst, v, 12)
	dst = append(dst, '"')
	dst = appendStrField(dst, "timestamp", g.cfg.start.UTC().Format("2006-01-02T15:04:05.000Z"))
	dst = appendStrField(dst, "cwd", "/home/dev/project")
	dst = append(dst, '}')
	return g.end(dst, start, "session")
}

// messageStartEnd appends a message_start and a message_end that both
// carry msg (a span of the arena), as Pi does for user, system and tool
// result messages.
func (g *Generator) messageStartEnd(dst []byte, msg [2]int) []byte {
	start := len(dst)
	dst = append(dst, `{"type":"message_start","message":`...)
	dst = append(dst, g.arena[msg[0]:msg[1]]...)
	dst = append(dst, '}')
	dst = g.end(dst, start, "message_start")
	return g.messageEnd(dst, msg)
}

func (g *Generator) messageEnd(dst []byte, msg [2]int) []byte {
	start := len(dst)
	dst = append(dst, `{"type":"message_end","message":`...)
	dst = append(dst, g.arena[msg[0]:msg[1]]...)
	dst = append(dst, '}')
	return g.end(dst, start, "message_end")
}

// keep stores msg in the arena as one of the run's messages.
func (g *Generator) keep(msg []byte) [2]int {
	s := len(g.arena)
	g.arena = append(g.arena, msg...)
	span := [2]int{s, len(g.arena)}
	g.runMsgs = append(g.runMsgs, span)
	return span
}

func (g *Generator) systemMessage(dst []byte) []byte {
	var m []byte
	m = append(m, `{"role":"system","content":"","sections":{`...)
	for i, name := range []string{"preamble", "tools", "rules", "docs", "cwd"} {
		if i > 0 {
			m = append(m, ',')
		}
		m = appendString(m, name)
		m = append(m, `:"`...)
		for range 40 + g.r.IntN(60) {
			m = appendDelta(m, g.r)
		}
		m = append(m, '"')
	}
	m = append(m, '}')
	m = appendIntField(m, "timestamp", g.now)
	m = append(m, `,"toolsAdded":[`...)
	for i, tool := range []string{"read", "bash", "edit", "write"} {
		if i > 0 {
			m = append(m, ',')
		}
		m = append(m, `{"name":`...)
		m = appendString(m, tool)
		m = append(m, `,"description":"`...)
		for range 20 + g.r.IntN(40) {
			m = appendDelta(m, g.r)
		}
		m = append(m, `","parameters":{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}}`...)
	}
	m = append(m, `]}`...)
	msg := g.keep(m)
	return g.messageStartEnd(dst, msg)
}

func (g *Generator) userMessage(dst []byte) []byte {
	g.tick(2000)
	var m []byte
	m = append(m, `{"role":"user","content":[{"type":"text","text":"`...)
	for range 3 + g.r.IntN(30) {
		m = appendDelta(m, g.r)
	}
	m = append(m, `"}]`...)
	m = appendIntField(m, "timestamp", g.now)
	m = append(m, '}')
	msg := g.keep(m)
	return g.messageStartEnd(dst, msg)
}
