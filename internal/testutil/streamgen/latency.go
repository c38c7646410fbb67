package streamgen

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"time"
)

// StampKey is the top-level field in which a paced record carries the
// wall-clock time, in Unix nanoseconds, just before it was written. Pi
// ignores unknown fields, so the record is still a valid message_update.
const StampKey = "sentAtNs"

// WritePaced writes one complete prompt whose assistant message streams n
// text deltas, one every interval. Each delta is stamped (see [StampKey])
// right before its own Write call, so a reader on the same machine can
// measure how long the record took to reach it. The schedule is absolute:
// a late write does not push the following ones back.
func WritePaced(w io.Writer, n int, interval time.Duration, opts ...Option) error {
	g := New(opts...)
	var buf []byte
	write := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	buf = g.session(buf)
	buf = g.simple(buf, "agent_start")
	buf = g.simple(buf, "turn_start")
	buf = g.userMessage(buf)
	g.usage = usage{input: 1200, output: 1}
	g.renderUsage()
	buf = append(buf, `{"type":"message_start","message":{"role":"assistant","content":[],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":`+zeroUsage+`,"stopReason":"pending","timestamp":`...)
	buf = strconv.AppendInt(buf, g.now, 10)
	buf = append(buf, "}}\n"...)
	start := len(buf)
	buf = g.updateHead(buf, "text_start", 0)
	buf = g.end(append(buf, "}}"...), start, kindTextStart)
	if err := write(); err != nil {
		return err
	}
	next := time.Now()
	for range n {
		next = next.Add(interval)
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		buf = g.updateHead(buf, "text_delta", 0)
		buf = append(buf, `,"delta":"`...)
		buf = appendDelta(buf, g.r)
		buf = append(buf, `"},"`+StampKey+`":`...)
		buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
		buf = append(buf, "}\n"...)
		if err := write(); err != nil {
			return err
		}
	}
	buf = append(buf, `{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"paced"}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":`...)
	buf = append(buf, g.usageJS...)
	buf = append(buf, `,"stopReason":"stop","timestamp":`...)
	buf = strconv.AppendInt(buf, g.now, 10)
	buf = append(buf, "}}\n"...)
	buf = append(buf, `{"type":"turn_end","message":{"role":"assistant","content":[],"stopReason":"stop"},"toolResults":[]}`+"\n"...)
	buf = append(buf, `{"type":"agent_end","messages":[],"willRetry":false}`+"\n"...)
	buf = append(buf, `{"type":"agent_settled","aborted":false}`+"\n"...)
	return write()
}

// Latency summarises how long stamped records took to arrive.
type Latency struct {
	Count              int
	P50, P90, P99, Max time.Duration
}

// MeasureLatency reads r to its end and compares each stamped record's
// stamp with the wall-clock time the record was read. Records without a
// stamp are ignored, and so are the first skip stamped ones: they measure
// the processes starting up (a reader that starts late finds them queued
// in the pipe), not the steady state.
func MeasureLatency(r io.Reader, skip int) (Latency, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	key := []byte(`"` + StampKey + `":`)
	var lat []time.Duration
	for {
		line, err := br.ReadSlice('\n')
		now := time.Now().UnixNano()
		if i := bytes.Index(line, key); i >= 0 {
			rest := line[i+len(key):]
			j := 0
			for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
				j++
			}
			sent, perr := strconv.ParseInt(string(rest[:j]), 10, 64)
			if perr != nil {
				return Latency{}, perr
			}
			if skip > 0 {
				skip--
			} else {
				lat = append(lat, time.Duration(now-sent))
			}
		}
		switch {
		case err == io.EOF:
			return summarize(lat), nil
		case errors.Is(err, bufio.ErrBufferFull):
			// A long unstamped record: its rest holds no stamp we need.
			continue
		case err != nil:
			return summarize(lat), err
		}
	}
}

func summarize(lat []time.Duration) Latency {
	if len(lat) == 0 {
		return Latency{}
	}
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	return Latency{Count: len(lat), P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: lat[len(lat)-1]}
}
