package telemetry

import (
	"fmt"
	"strings"
)

// Summary is the one line pi-otel prints at exit, such as
// "pi-otel: 1 trace (4bf92f3577b34da6a3ce929d0e0e4736), 12 spans → otlp grpc localhost:4317".
// Failed and dropped spans are added when there are any.
func (t *Pipeline) Summary() string {
	s, first := t.counters.snapshot()
	var b strings.Builder
	b.WriteString("pi-otel: ")
	switch s.Traces {
	case 1:
		fmt.Fprintf(&b, "1 trace (%s)", first)
	default:
		fmt.Fprintf(&b, "%d traces", s.Traces)
	}
	fmt.Fprintf(&b, ", %s → %s", plural(s.Ended, "span"), t.traceDest)
	var problems []string
	if t.logCount != nil {
		fmt.Fprintf(&b, ", %s → %s", plural(t.logCount.exported.Load(), "log record"), t.logDest)
		if n := t.logCount.failed.Load(); n > 0 {
			problems = append(problems, plural(n, "log record")+" failed to export")
		}
		if n := t.logCount.dropped(); n > 0 && t.logsDone.Load() {
			problems = append(problems, plural(n, "log record")+" dropped")
		}
	}
	sp := t.SpoolStats()
	if s.Failed > 0 {
		problems = append(problems, fmt.Sprintf("%d failed to export", s.Failed))
	}
	if sp.Full > 0 {
		problems = append(problems, fmt.Sprintf("%d not kept (the spool %s is full)", sp.Full, t.spool.Dir()))
	}
	if s.Dropped > 0 {
		problems = append(problems, plural(s.Dropped, "span")+" dropped")
	}
	if n := t.Refused(); n > 0 {
		problems = append(problems, plural(n, "span")+" dropped (refused by the collector as invalid; not sent again)")
	}
	if p := s.Pending(); p > 0 && t.queue != nil {
		problems = append(problems, fmt.Sprintf("%d pending", p))
	}
	// What this process spooled and then sent itself (a watch that saw
	// the collector come back) no longer waits for another pi-otel.
	if kept := s.Spooled - sp.Resent; kept > 0 {
		problems = append(problems, fmt.Sprintf("%d kept in %s for the next pi-otel to send", kept, t.spool.Dir()))
	}
	if sp.Resent > 0 {
		problems = append(problems, plural(sp.Resent, "span")+" delivered late, from the spool")
	}
	if sp.Late > 0 {
		problems = append(problems, plural(sp.Late, "span")+" of earlier runs delivered")
	}
	if sp.Expired > 0 {
		problems = append(problems, plural(sp.Expired, "spooled span")+" dropped (older than --spool-max-age; not sent)")
	}
	if sp.Corrupt > 0 {
		problems = append(problems, plural(sp.Corrupt, "damaged spool file")+" set aside")
	}
	if len(problems) > 0 {
		b.WriteString("; " + strings.Join(problems, ", "))
	}
	return b.String()
}

func plural(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// Refused counts the spans the collector refused outright, the spool's
// included: they are lost, and not sent again.
func (t *Pipeline) Refused() int64 {
	s, _ := t.counters.snapshot()
	return s.Refused + t.SpoolStats().Refused
}
