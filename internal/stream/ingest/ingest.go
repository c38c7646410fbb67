// Package ingest feeds raw records to the mapper: it decodes them, counts
// and reports the ones it cannot trace, and stamps each with a time.
//
// A record that fails to decode has already been passed through by the
// caller; here it is only counted and, rate-limited, reported on stderr.
package ingest

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/pi-otel/pi-otel/internal/agentmap"
	"github.com/pi-otel/pi-otel/internal/event"
	"github.com/pi-otel/pi-otel/internal/nested"
	"github.com/pi-otel/pi-otel/internal/option"
)

// Clock gives the time an event happened.
type Clock interface {
	Time(ev *event.Event) time.Time
}

// LiveClock stamps events with their arrival time.
type LiveClock struct{}

// Time returns now.
func (LiveClock) Time(*event.Event) time.Time { return time.Now() }

// Stats counts records. It is safe to read while records flow.
type Stats struct {
	Records, Malformed, InvalidUTF8, NotObject, NoType int64
	// Repaired counts lines that held several records (writes that met
	// on one line) and were read as such (event.SplitLine); each of
	// their records is in Records, and what lay between them that was
	// none in Malformed.
	Repaired int64
	// FieldsDropped counts records traced without a field whose value
	// did not fit (a number out of range such as 1e999); they are not
	// in Malformed.
	FieldsDropped int64
}

// Sink decodes records into a mapper. Record must be called from one
// goroutine; Stats may be read from any.
type Sink struct {
	m       *agentmap.Mapper
	clock   Clock
	opts    event.Options
	warn    io.Writer
	limiter warnLimiter
	dec     *event.Decoder // reused: a message_update allocates nothing
	probe   *event.Decoder // anyRecord's, made at the first damaged line

	records, malformed, invalidUTF8, notObject, noType, fieldsDropped, repaired atomic.Int64
}

type config struct {
	clock   Clock
	warn    io.Writer
	content bool
}

// Option configures a Sink.
type Option = option.Option[config]

// WithClock sets how events are timed (default: arrival time).
func WithClock(clock Clock) Option {
	return option.Func[config](func(c *config) { c.clock = clock })
}

// WithWarnings sets where bad records are reported (default: nowhere).
func WithWarnings(w io.Writer) Option {
	return option.Func[config](func(c *config) { c.warn = w })
}

// WithContent keeps message deltas for content capture.
func WithContent(on bool) Option {
	return option.Func[config](func(c *config) { c.content = on })
}

// New returns a Sink feeding m.
func New(m *agentmap.Mapper, opts ...Option) *Sink {
	c := option.Apply(config{clock: LiveClock{}, warn: io.Discard}, opts)
	// The bash calls are read by this decode, for the mapper to hand on.
	s := &Sink{m: m, clock: c.clock, warn: c.warn, opts: event.Options{Content: c.content, BashCalls: m.ReadsBashCalls()}}
	s.dec = event.NewDecoder(s.opts)
	return s
}

// Record handles one framed record. It reads rec only during the call.
// A line that holds several records, written with no LF between them, is
// read as those records.
func (s *Sink) Record(rec []byte) {
	n := s.records.Add(1)
	ev, err := s.dec.Decode(rec)
	if err != nil && ev.Type == "" && (errors.Is(err, event.ErrInvalidJSON) || errors.Is(err, event.ErrInvalidUTF8)) {
		pieces := event.SplitLine(rec)
		if pieces != nil && !s.anyRecord(rec, pieces) {
			s.bad(n, "", err)
			return
		}
		if pieces != nil {
			s.repaired.Add(1)
			s.records.Add(-1)
			for _, p := range pieces {
				if p.Value {
					s.record(rec[p.Start:p.End])
					continue
				}
				s.bad(s.records.Add(1), "", fmt.Errorf("%w: %d bytes between records", event.ErrInvalidJSON, p.End-p.Start))
			}
			return
		}
	}
	s.handle(n, ev, err)
}

// anyRecord reports whether a piece of the line is a record: a line whose
// pieces are none ({}0) is one malformed record, not a repair, as the
// session files' reader counts it. Only a damaged line costs the decode.
func (s *Sink) anyRecord(rec []byte, pieces []event.Piece) bool {
	if s.probe == nil {
		// Its own decoder: the pieces are decoded again to be handled.
		s.probe = event.NewDecoder(s.opts)
	}
	for _, p := range pieces {
		if !p.Value {
			continue
		}
		if ev, _ := s.probe.Decode(rec[p.Start:p.End]); ev.Type != "" {
			return true
		}
	}
	return false
}

// record handles one record of a line taken apart.
func (s *Sink) record(rec []byte) {
	n := s.records.Add(1)
	ev, err := s.dec.Decode(rec)
	s.handle(n, ev, err)
}

func (s *Sink) handle(n int64, ev *event.Event, err error) {
	if err != nil {
		s.bad(n, ev.Type, err)
		if ev.Type == "" {
			return
		}
		// A known type whose fields did not decode still marks its place
		// in the lifecycle (a future Pi may change a field's shape).
	}
	s.m.Handle(agentmap.Input{Event: ev, At: s.clock.Time(ev), Nested: nested.FromEvent(ev)})
}

func (s *Sink) bad(n int64, typ string, err error) {
	what := "record"
	if typ != "" {
		what = typ + " record"
	}
	outcome := "not traced"
	switch {
	case errors.Is(err, event.ErrFieldDropped):
		s.fieldsDropped.Add(1)
		outcome = "traced without a field"
	case errors.Is(err, event.ErrInvalidUTF8):
		s.invalidUTF8.Add(1)
	case errors.Is(err, event.ErrNotObject):
		s.notObject.Add(1)
	case errors.Is(err, event.ErrNoType):
		s.noType.Add(1)
	}
	if outcome == "not traced" {
		s.malformed.Add(1)
	}
	if ok, suppressed := s.limiter.allow(time.Now()); ok {
		msg := fmt.Sprintf("pi-otel: %s %d %s: %v (passed through unchanged)", what, n, outcome, err)
		if suppressed > 0 {
			msg += fmt.Sprintf("; %d more since the last report", suppressed)
		}
		if s.limiter.sent == warnBurst {
			msg += fmt.Sprintf("; further ones are reported at most once per %v, and counted in the summary", warnInterval)
		}
		fmt.Fprintln(s.warn, msg)
	}
}

// Unreported is how many bad records were held back by the warning limit
// since the last warning; the caller says so at the end.
func (s *Sink) Unreported() int64 { return s.limiter.suppressed.Load() }

// Stats returns the counters.
func (s *Sink) Stats() Stats {
	return Stats{
		Records:     s.records.Load(),
		Malformed:   s.malformed.Load(),
		InvalidUTF8: s.invalidUTF8.Load(),
		NotObject:   s.notObject.Load(),
		NoType:      s.noType.Load(),
		Repaired:    s.repaired.Load(),

		FieldsDropped: s.fieldsDropped.Load(),
	}
}

// warnLimiter lets the first few reports through, then one per interval,
// so a stream of garbage cannot flood the user's terminal.
type warnLimiter struct {
	sent       int
	last       time.Time
	suppressed atomic.Int64 // read at the end from another goroutine
}

const (
	warnBurst    = 5
	warnInterval = 10 * time.Second
)

func (l *warnLimiter) allow(now time.Time) (bool, int64) {
	if l.sent < warnBurst || now.Sub(l.last) >= warnInterval {
		l.sent++
		l.last = now
		return true, l.suppressed.Swap(0)
	}
	l.suppressed.Add(1)
	return false, 0
}
