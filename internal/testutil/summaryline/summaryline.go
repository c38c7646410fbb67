// Package summaryline reads pi-otel's exit line on stderr, such as
// "pi-otel: 1 trace (4bf9…), 12 spans → otlp grpc 127.0.0.1:4317", which
// every suite that runs pi-otel checks against what the backend holds.
package summaryline

import (
	"regexp"
	"strconv"
	"strings"
)

// Summary is one exit line.
type Summary struct {
	Line    string
	Traces  int
	TraceID string // when Traces == 1
	Spans   int
	// Dest is what follows the arrow: the destination and, after a ";",
	// any export trouble.
	Dest string
}

var re = regexp.MustCompile(`(?m)^pi-otel: (?:1 trace \(([0-9a-f]{32})\)|(\d+) traces), (\d+) spans? → (.*)$`)

// Parse finds the last exit line in stderr.
func Parse(stderr []byte) (Summary, bool) {
	all := re.FindAllSubmatch(stderr, -1)
	if len(all) == 0 {
		return Summary{}, false
	}
	m := all[len(all)-1]
	s := Summary{Line: string(m[0]), TraceID: string(m[1]), Dest: string(m[4])}
	if s.TraceID != "" {
		s.Traces = 1
	} else {
		s.Traces, _ = strconv.Atoi(string(m[2]))
	}
	s.Spans, _ = strconv.Atoi(string(m[3]))
	return s, true
}

// Trouble reports whether the line reports export trouble (a ";" after
// the destination).
func (s Summary) Trouble() bool { return strings.Contains(s.Dest, ";") }
