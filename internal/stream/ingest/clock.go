package ingest

import (
	"errors"
	"time"

	"github.com/pi-otel/pi-otel/internal/event"
)

// StreamClock places events in time from what the stream itself carries,
// for replay: the session header's ISO timestamp, message timestamps (epoch
// ms), the assistant message's durationMs, and tools' durationMs. An event
// with no time of its own takes the latest time seen, so spans between two
// timed records collapse onto the earlier one: an approximation.
type StreamClock struct {
	last       time.Time
	toolStarts map[string]time.Time
	// pending is a retry's announced delay: the next untimed event is
	// placed after it, so a replayed retry spans its wait.
	pending time.Duration
	// tiedAt and tied count the tools started at one instant.
	tiedAt time.Time
	tied   int
}

// NewStreamClock returns a clock that starts at start until the stream
// says otherwise.
func NewStreamClock(start time.Time) *StreamClock {
	return &StreamClock{last: start, toolStarts: map[string]time.Time{}}
}

// Time returns when ev happened.
func (c *StreamClock) Time(ev *event.Event) time.Time {
	if ev.Type == event.TypeAutoRetryStart {
		c.pending = ms(ev.DelayMs)
		return c.last
	}
	if c.pending > 0 && ev.Type == event.TypeAgentStart {
		c.advance(c.last.Add(c.pending))
		c.pending = 0
	}
	if t, ok := OwnTime(ev); ok {
		return c.advance(t)
	}
	switch ev.Type {
	case event.TypeToolExecutionStart:
		// Parallel tools start at the same instant of the stream; a
		// nanosecond apiece keeps them in the stream's order wherever
		// spans are sorted by start (the console tree, trace views),
		// instead of by random span id.
		if !c.last.Equal(c.tiedAt) {
			c.tiedAt, c.tied = c.last, 0
		}
		t := c.last.Add(time.Duration(c.tied))
		c.tied++
		c.toolStarts[ev.ToolCallID] = t
		return t
	case event.TypeToolExecutionEnd:
		start, ok := c.toolStarts[ev.ToolCallID]
		delete(c.toolStarts, ev.ToolCallID)
		if ok && ev.DurationMs != nil {
			// Parallel tools end in any order: this end is exact even
			// when another tool already moved the clock further.
			end := start.Add(ms(*ev.DurationMs))
			c.advance(end)
			return end
		}
	}
	return c.last
}

func (c *StreamClock) advance(t time.Time) time.Time {
	if t.After(c.last) {
		c.last = t
	}
	return c.last
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// OwnTime is the time an event carries itself, if any: the session
// header's, or a message's (an assistant message's end adds its
// durationMs).
func OwnTime(ev *event.Event) (time.Time, bool) {
	switch ev.Type {
	case event.TypeSession:
		if t, err := time.Parse(time.RFC3339Nano, ev.Timestamp); err == nil {
			return t, true
		}
	case event.TypeMessageStart, event.TypeMessageEnd:
		msg := ev.Message
		if msg == nil || msg.Timestamp <= 0 {
			break
		}
		t := time.UnixMilli(int64(msg.Timestamp))
		// An assistant message's call ends its duration after it starts
		// (Pi's durationMs from its timestamp, oh-my-pi's completedAt); a
		// tool result's timestamp is already its end, and adding the
		// tool's durationMs again put the next model call a tool-duration
		// late.
		if ev.Type == event.TypeMessageEnd && msg.Role == "assistant" {
			if s, d, ok := msg.CallTime(); ok && !s.IsZero() {
				t = s.Add(d)
			}
		}
		return t, true
	}
	return time.Time{}, false
}

// Now is the latest time the stream has reached.
func (c *StreamClock) Now() time.Time { return c.last }

// Anchor returns the first time one of records carries. A replay looks for
// it before it starts, since an RPC capture has no header and opens with
// untimed events.
func Anchor(records [][]byte) (time.Time, bool) {
	// A Decoder, not Decode: it does not copy the record's raw JSON, which
	// for a huge tool output would be a second copy of the record.
	dec := event.NewDecoder(event.Options{})
	for _, rec := range records {
		ev, err := dec.Decode(rec)
		if err != nil && !errors.Is(err, event.ErrFieldDropped) {
			continue
		}
		if t, ok := OwnTime(ev); ok {
			return t, true
		}
	}
	return time.Time{}, false
}

// Reset moves the clock to t, earlier or later.
func (c *StreamClock) Reset(t time.Time) { c.last = t }
