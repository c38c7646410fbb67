package streamgen

import "time"

// Model prices in USD per token, as Pi computes cost.
const (
	priceInput      = 3.0 / 1e6
	priceOutput     = 15.0 / 1e6
	priceCacheRead  = 0.3 / 1e6
	priceCacheWrite = 3.75 / 1e6
)

// truncatedOutput is how much output Pi keeps in a tool result for the
// model (its 50 KB limit); the tool's own end record carries all of it.
const truncatedOutput = 50 << 10

const zeroUsage = `{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`

type usage struct {
	input, output, cacheRead, cacheWrite, reasoning int64
}

func appendUsage(b []byte, u usage) []byte {
	b = append(b, '{')
	b = appendIntField(b, "input", u.input)
	b = appendIntField(b, "output", u.output)
	b = appendIntField(b, "cacheRead", u.cacheRead)
	b = appendIntField(b, "cacheWrite", u.cacheWrite)
	b = appendIntField(b, "reasoning", u.reasoning)
	b = appendIntField(b, "totalTokens", u.input+u.output+u.cacheRead+u.cacheWrite)
	ci := float64(u.input) * priceInput
	co := float64(u.output) * priceOutput
	cr := float64(u.cacheRead) * priceCacheRead
	cw := float64(u.cacheWrite) * priceCacheWrite
	b = append(b, `,"cost":{`...)
	b = appendNumField(b, "input", ci)
	b = appendNumField(b, "output", co)
	b = appendNumField(b, "cacheRead", cr)
	b = appendNumField(b, "cacheWrite", cw)
	b = appendNumField(b, "total", ci+co+cr+cw)
	b = appendBoolField(b, "totalFromProvider", false)
	return append(b, "}}"...)
}

// renderUsage refreshes the usage object every update carries. Providers
// report usage at the start and the end of a response, so it changes only
// now and then while a message streams.
func (g *Generator) renderUsage() {
	g.usageJS = appendUsage(g.usageJS[:0], g.usage)
}

// Record kinds for the statistics, one per assistantMessageEvent type.
const (
	kindTextStart     = "message_update/text_start"
	kindTextDelta     = "message_update/text_delta"
	kindTextEnd       = "message_update/text_end"
	kindThinkingStart = "message_update/thinking_start"
	kindThinkingDelta = "message_update/thinking_delta"
	kindThinkingEnd   = "message_update/thinking_end"
	kindToolcallStart = "message_update/toolcall_start"
	kindToolcallDelta = "message_update/toolcall_delta"
	kindToolcallEnd   = "message_update/toolcall_end"
)

// updateHead opens a message_update record up to the contentIndex.
func (g *Generator) updateHead(dst []byte, ameType string, ci int) []byte {
	dst = append(dst, `{"type":"message_update","usage":`...)
	dst = append(dst, g.usageJS...)
	dst = append(dst, `,"assistantMessageEvent":{"type":"`...)
	dst = append(dst, ameType...)
	return appendIntField(append(dst, '"'), "contentIndex", int64(ci))
}

// streamBlock streams one text or thinking block: its start, its deltas,
// and its end with the whole content. It leaves the escaped text in g.text.
func (g *Generator) streamBlock(dst []byte, ci int, thinking bool, deltas int) []byte {
	name, kStart, kDelta, kEnd := "text", kindTextStart, kindTextDelta, kindTextEnd
	if thinking {
		name, kStart, kDelta, kEnd = "thinking", kindThinkingStart, kindThinkingDelta, kindThinkingEnd
	}
	start := len(dst)
	dst = g.updateHead(dst, name+"_start", ci)
	dst = g.end(append(dst, "}}"...), start, kStart)
	g.text = g.text[:0]
	for i := range deltas {
		if i%16 == 15 {
			n := int64(8 + g.r.IntN(24))
			g.usage.output += n
			if thinking {
				g.usage.reasoning += n
			}
			g.renderUsage()
		}
		start := len(dst)
		dst = g.updateHead(dst, name+"_delta", ci)
		dst = append(dst, `,"delta":"`...)
		d := len(dst)
		dst = appendDelta(dst, g.r)
		g.text = append(g.text, dst[d:]...)
		dst = g.end(append(dst, `"}}`...), start, kDelta)
	}
	g.now += int64(deltas) * 12
	start = len(dst)
	dst = g.updateHead(dst, name+"_end", ci)
	dst = append(dst, `,"content":"`...)
	dst = append(dst, g.text...)
	return g.end(append(dst, `"}}`...), start, kEnd)
}

type toolCall struct {
	id, name string
	args     []byte // JSON object
}

var toolNames = []string{"bash", "bash", "bash", "read", "edit", "write"}

func (g *Generator) newToolCall() toolCall {
	c := toolCall{id: g.id("toolu_01"), name: toolNames[g.r.IntN(len(toolNames))]}
	var a []byte
	switch c.name {
	case "bash":
		a = append(a, `{"command":"`...)
		for range 1 + g.r.IntN(4) {
			a = appendDelta(a, g.r)
		}
		a = append(a, `"}`...)
	case "edit":
		a = append(a, `{"path":"src/`...)
		a = append(a, words[g.r.IntN(len(words))]...)
		a = append(a, `.go","edits":[{"oldText":"`...)
		a = appendDelta(a, g.r)
		a = append(a, `","newText":"`...)
		for range 2 + g.r.IntN(20) {
			a = appendDelta(a, g.r)
		}
		a = append(a, `"}]}`...)
	case "write":
		a = append(a, `{"path":"notes/`...)
		a = append(a, words[g.r.IntN(len(words))]...)
		a = append(a, `.md","content":"`...)
		for range 10 + g.r.IntN(80) {
			a = appendDelta(a, g.r)
		}
		a = append(a, `"}`...)
	default:
		a = append(a, `{"path":"internal/`...)
		a = append(a, words[g.r.IntN(len(words))]...)
		a = append(a, `.go"}`...)
	}
	c.args = a
	return c
}

// assistantMessage streams one assistant response with calls tool calls
// and returns the arena span of the final message. A stop of "error" is
// an overloaded provider: no content.
func (g *Generator) assistantMessage(dst []byte, calls int, stop string) ([]byte, [2]int, []toolCall) {
	g.tick(1500)
	ts := g.now
	g.usage = usage{input: 200 + int64(g.r.IntN(4000)), cacheWrite: int64(g.r.IntN(2) * g.r.IntN(3000))}
	if g.r.IntN(3) > 0 {
		g.usage.cacheRead = 5000 + int64(g.r.IntN(60000))
	}
	g.renderUsage()

	start := len(dst)
	dst = append(dst, `{"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":`...)
	dst = append(dst, zeroUsage...)
	dst = appendIntField(append(dst, `,"stopReason":"pending"`...), "timestamp", ts)
	dst = g.end(append(dst, "}}"...), start, "message_start")

	var content []byte
	var tcs []toolCall
	ci := 0
	if stop != "error" {
		if g.r.IntN(2) == 0 {
			dst = g.streamBlock(dst, ci, true, 5+g.r.IntN(300))
			content = append(content, `{"type":"thinking","thinking":"`...)
			content = append(content, g.text...)
			content = append(content, `","thinkingSignature":"sig_`...)
			content = append(content, g.id("")...)
			content = append(content, `"}`...)
			ci++
		}
		if calls == 0 || g.r.IntN(5) < 3 {
			dst = g.streamBlock(dst, ci, false, 5+g.r.IntN(400))
			if len(content) > 0 {
				content = append(content, ',')
			}
			content = append(content, `{"type":"text","text":"`...)
			content = append(content, g.text...)
			content = append(content, `"}`...)
			ci++
		}
		for range calls {
			tc := g.newToolCall()
			tcs = append(tcs, tc)
			dst = g.streamToolCall(dst, ci, tc)
			if len(content) > 0 {
				content = append(content, ',')
			}
			content = appendToolCallBlock(content, tc)
			ci++
		}
	}

	var m []byte
	m = append(m, `{"role":"assistant","content":[`...)
	m = append(m, content...)
	m = append(m, `],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":`...)
	m = append(m, g.usageJS...)
	m = appendStrField(m, "stopReason", stopReason(stop, calls))
	m = appendIntField(m, "timestamp", ts)
	m = appendStrField(m, "responseId", g.id("msg_01"))
	if stop == "error" {
		m = appendStrField(m, "errorMessage", `529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	} else {
		raw := "end_turn"
		if calls > 0 {
			raw = "tool_use"
		}
		m = appendStrField(m, "rawStopReason", raw)
	}
	m = appendIntField(m, "durationMs", g.now-ts+int64(g.r.IntN(400)))
	m = appendStrField(m, "thinkingLevel", "medium")
	m = append(m, '}')
	msg := g.keep(m)
	return g.messageEnd(dst, msg), msg, tcs
}

func stopReason(stop string, calls int) string {
	if stop == "stop" && calls > 0 {
		return "toolUse"
	}
	return stop
}

func appendToolCallBlock(b []byte, tc toolCall) []byte {
	b = append(b, `{"type":"toolCall","id":`...)
	b = appendString(b, tc.id)
	b = appendStrField(b, "name", tc.name)
	b = append(b, `,"arguments":`...)
	b = append(b, tc.args...)
	return append(b, '}')
}

// streamToolCall streams a tool call: its start, its arguments in
// fragments, and its end.
func (g *Generator) streamToolCall(dst []byte, ci int, tc toolCall) []byte {
	start := len(dst)
	dst = g.updateHead(dst, "toolcall_start", ci)
	dst = appendStrField(dst, "id", tc.id)
	dst = appendStrField(dst, "toolName", tc.name)
	dst = g.end(append(dst, "}}"...), start, kindToolcallStart)
	args := string(tc.args)
	for len(args) > 0 {
		n := len(cutRunes(args, 4+g.r.IntN(40)))
		start := len(dst)
		dst = g.updateHead(dst, "toolcall_delta", ci)
		dst = appendStrField(dst, "delta", args[:n])
		dst = g.end(append(dst, "}}"...), start, kindToolcallDelta)
		args = args[n:]
	}
	start = len(dst)
	dst = g.updateHead(dst, "toolcall_end", ci)
	dst = append(dst, `,"toolCall":`...)
	dst = appendToolCallBlock(dst, tc)
	return g.end(append(dst, "}}"...), start, kindToolcallEnd)
}

// outputSize draws how much a tool prints: usually a little, sometimes
// tens of KB, and one run in bigEvery several MB.
func (g *Generator) outputSize() int {
	switch {
	case g.cfg.bigEvery > 0 && g.r.IntN(g.cfg.bigEvery) == 0:
		return g.cfg.bigMin + g.r.IntN(g.cfg.bigMax-g.cfg.bigMin+1)
	case g.r.IntN(10) < 7:
		return 50 + g.r.IntN(2000)
	default:
		return 2000 + g.r.IntN(60<<10)
	}
}

// appendToolHead opens a tool execution event of type typ for call tc.
func appendToolHead(dst []byte, typ string, tc toolCall) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, '"')
	dst = appendStrField(dst, "toolCallId", tc.id)
	return appendStrField(dst, "toolName", tc.name)
}

// tools runs the calls of one assistant message: all start (parallel
// calls run together), each streams updates and ends, then each result
// becomes a toolResult message. It returns the results' arena spans.
func (g *Generator) tools(dst []byte, calls []toolCall) ([]byte, [][2]int) {
	for _, tc := range calls {
		start := len(dst)
		dst = appendToolHead(dst, "tool_execution_start", tc)
		dst = append(dst, `,"args":`...)
		dst = append(dst, tc.args...)
		dst = g.end(append(dst, '}'), start, "tool_execution_start")
	}
	type result struct {
		size, line int
		isError    bool
		ms         int64
	}
	results := make([]result, len(calls))
	for i, tc := range calls {
		res := result{size: g.outputSize(), line: g.r.IntN(len(g.out.starts)), isError: g.r.IntN(25) == 0}
		res.ms = 5 + int64(g.r.IntN(3000)) + int64(res.size>>12)
		results[i] = res
		if tc.name == "bash" {
			// Pi streams bash output as it comes: the partial result is
			// the output so far, up to its truncation limit.
			for u := range 1 + g.r.IntN(3) {
				start := len(dst)
				dst = appendToolHead(dst, "tool_execution_update", tc)
				dst = append(dst, `,"args":`...)
				dst = append(dst, tc.args...)
				dst = append(dst, `,"partialResult":{"content":[{"type":"text","text":"`...)
				dst = g.out.appendOutput(dst, min(res.size*(u+1)/4, truncatedOutput), res.line)
				dst = append(dst, `"}],"details":{}}`...)
				dst = g.end(append(dst, '}'), start, "tool_execution_update")
			}
		}
		start := len(dst)
		dst = appendToolHead(dst, "tool_execution_end", tc)
		dst = append(dst, `,"result":{"content":[{"type":"text","text":"`...)
		dst = g.out.appendOutput(dst, res.size, res.line)
		dst = append(dst, `"}],"details":{`...)
		dst = appendBoolField(dst, "truncated", res.size > truncatedOutput)
		dst = append(dst, '}', '}')
		dst = appendBoolField(dst, "isError", res.isError)
		dst = appendIntField(dst, "durationMs", res.ms)
		dst = g.end(append(dst, '}'), start, "tool_execution_end")
		g.now += res.ms
	}
	spans := make([][2]int, len(calls))
	for i, tc := range calls {
		res := results[i]
		var m []byte
		m = append(m, `{"role":"toolResult"`...)
		m = appendStrField(m, "toolCallId", tc.id)
		m = appendStrField(m, "toolName", tc.name)
		m = append(m, `,"content":[{"type":"text","text":"`...)
		m = g.out.appendOutput(m, min(res.size, truncatedOutput), res.line)
		m = append(m, `"}],"details":{`...)
		m = appendBoolField(m, "truncated", res.size > truncatedOutput)
		m = append(m, '}')
		m = appendBoolField(m, "isError", res.isError)
		m = appendIntField(m, "timestamp", g.now)
		m = append(m, '}')
		spans[i] = g.keep(m)
		dst = g.messageStartEnd(dst, spans[i])
	}
	return dst, spans
}

func (g *Generator) turnEnd(dst []byte, msg [2]int, results [][2]int) []byte {
	start := len(dst)
	dst = append(dst, `{"type":"turn_end","message":`...)
	dst = append(dst, g.arena[msg[0]:msg[1]]...)
	dst = append(dst, `,"toolResults":[`...)
	for i, r := range results {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, g.arena[r[0]:r[1]]...)
	}
	return g.end(append(dst, "]}"...), start, "turn_end")
}

// agentEnd carries every message of the agent run.
func (g *Generator) agentEnd(dst []byte, willRetry bool) []byte {
	start := len(dst)
	dst = append(dst, `{"type":"agent_end","messages":[`...)
	for i, m := range g.runMsgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, g.arena[m[0]:m[1]]...)
	}
	dst = append(dst, ']')
	dst = appendBoolField(dst, "willRetry", willRetry)
	return g.end(append(dst, '}'), start, "agent_end")
}

// failedAttempt is an agent run whose only response fails with an
// overload, followed by Pi's retry announcement.
func (g *Generator) failedAttempt(dst []byte) []byte {
	dst, msg, _ := g.assistantMessage(dst, 0, "error")
	dst = g.turnEnd(dst, msg, nil)
	dst = g.agentEnd(dst, true)
	start := len(dst)
	dst = append(dst, `{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000`...)
	dst = appendStrField(dst, "errorMessage", `529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	dst = g.end(append(dst, '}'), start, "auto_retry_start")
	g.now += 2000
	start = len(dst)
	dst = append(dst, `{"type":"entry_appended","entry":{"type":"context_edit"`...)
	dst = appendStrField(dst, "id", g.id(""))
	dst = appendStrField(dst, "parentId", g.id(""))
	dst = appendStrField(dst, "timestamp", time.UnixMilli(g.now).UTC().Format("2006-01-02T15:04:05.000Z"))
	dst = appendStrField(dst, "targetId", g.id(""))
	dst = append(dst, `,"replacement":null}`...)
	return g.end(append(dst, '}'), start, "entry_appended")
}

func (g *Generator) compaction(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, `{"type":"compaction_start","reason":"threshold"}`...)
	dst = g.end(dst, start, "compaction_start")
	g.now += 3000 + int64(g.r.IntN(20000))
	start = len(dst)
	dst = append(dst, `{"type":"compaction_end","reason":"threshold","result":{"summary":"`...)
	for range 20 + g.r.IntN(200) {
		dst = appendDelta(dst, g.r)
	}
	dst = append(dst, '"')
	dst = appendStrField(dst, "firstKeptEntryId", g.id(""))
	before := 150000 + int64(g.r.IntN(40000))
	dst = appendIntField(dst, "tokensBefore", before)
	dst = appendIntField(dst, "estimatedTokensAfter", before/8)
	dst = append(dst, `,"usage":`...)
	dst = appendUsage(dst, usage{input: before, output: 2000 + int64(g.r.IntN(3000))})
	dst = append(dst, `,"details":{"readFiles":[],"modifiedFiles":[]}}`...)
	dst = appendBoolField(dst, "aborted", false)
	dst = appendBoolField(dst, "willRetry", false)
	return g.end(append(dst, '}'), start, "compaction_end")
}
