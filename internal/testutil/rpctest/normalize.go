package rpctest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

var (
	reUUID  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	reTimes = regexp.MustCompile(`"(timestamp|durationMs|wall_time_seconds)":[0-9.e+-]+`)
	rePort  = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	reEntry = regexp.MustCompile(`"firstKeptEntryId":"[^"]*"`)
)

// Normalized is a run's transcript with what Pi randomises per run
// replaced: ids, clocks, ports, its working directory, and how a running
// command's output happened to be split into update records.
type Normalized struct {
	In, Out []string
	// Output is each command's or tool's streamed output, joined.
	Output []string
}

// Normalize prepares r for comparison with another run of its scenario.
func Normalize(r *Result) Normalized {
	var n Normalized
	clean := func(raw []byte) string {
		s := string(raw)
		if r.Dir != "" {
			s = strings.ReplaceAll(s, r.Dir, "<dir>")
		}
		s = reUUID.ReplaceAllString(s, "<uuid>")
		s = reTimes.ReplaceAllString(s, `"$1":<n>`)
		// Whether an aborted message carries durationMs depends on when
		// the abort lands in Pi, not on the proxy.
		s = strings.ReplaceAll(s, `,"durationMs":<n>`, "")
		s = rePort.ReplaceAllString(s, "127.0.0.1:<port>")
		return reEntry.ReplaceAllString(s, `"firstKeptEntryId":<id>`)
	}
	output := map[string]string{}
	for _, l := range r.Lines {
		if l.Dir == In {
			n.In = append(n.In, clean(l.Raw))
			continue
		}
		switch l.Type() {
		case "bash_execution_update":
			output["bash "+l.Str("id")] += l.Str("delta")
			continue
		case "tool_execution_update":
			// Pi reports partial output as it happens; only the final
			// result (in tool_execution_end) is deterministic.
			continue
		case "message_update":
			// The usage snapshot depends on whether the model's usage
			// chunk was read yet; the streamed event itself does not.
			ev, _ := json.Marshal(l.Rec["assistantMessageEvent"])
			n.Out = append(n.Out, "message_update "+clean(ev))
			continue
		}
		n.Out = append(n.Out, clean(l.Raw))
	}
	for k, v := range output {
		n.Output = append(n.Output, fmt.Sprintf("%s: %q", k, v))
	}
	sort.Strings(n.Output)
	return n
}

// Diff describes the first difference between a and b, or "" when equal.
func (a Normalized) Diff(b Normalized) string {
	for _, part := range []struct {
		name string
		x, y []string
	}{{"controller line", a.In, b.In}, {"pi record", a.Out, b.Out}, {"output", a.Output, b.Output}} {
		for i := 0; i < len(part.x) || i < len(part.y); i++ {
			var x, y string
			if i < len(part.x) {
				x = part.x[i]
			}
			if i < len(part.y) {
				y = part.y[i]
			}
			if x != y {
				return fmt.Sprintf("%s %d differs:\n  %s\n  %s", part.name, i+1, head(x, 600), head(y, 600))
			}
		}
	}
	return ""
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
